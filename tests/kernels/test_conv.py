"""Conv properties the registry cases cannot express: output lengths against PyTorch over many
configurations, the transposed conv's phase plan, tile choice, weight repacking, argument errors,
unbatched input, and the ops layer's placement (PyTorch on the CPU, matching it exactly)."""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import KERNEL_DEVICE
from tilewave.spec.tolerance import scaled_max_error
from tilewave.kernels import activation
from tilewave.kernels import conv as K
from tilewave.ops import conv as ops
from tilewave.ops.dispatch import placements, reset_placements


def _meta(*shape):
    return torch.empty(*shape, device="meta")


def test_conv1d_output_length_matches_pytorch():
    for L, k, s, p, d in itertools.product((1, 2, 7, 16, 33), (1, 2, 3, 7, 11), (1, 2, 3, 6), (0, 1, 3, 5),
                                           (1, 2, 5)):
        if L + 2 * p < d * (k - 1) + 1:
            continue  # PyTorch rejects an input shorter than the dilated kernel
        ref = F.conv1d(_meta(1, 2, L), _meta(3, 2, k), stride=s, padding=p, dilation=d).shape[-1]
        assert K.conv1d_out_len(L, k, s, p, d) == ref, (L, k, s, p, d)


def test_conv1d_transpose_output_length_matches_pytorch():
    for L, k, s, p, d in itertools.product((1, 2, 9, 16), (1, 3, 4, 12, 20), (1, 2, 3, 6, 10), (0, 1, 3, 5),
                                           (1, 2, 3)):
        for op in range(max(s, d)):
            n = K.conv1d_transpose_out_len(L, k, s, p, op, d)
            if n < 1:
                continue
            ref = F.conv_transpose1d(_meta(1, 2, L), _meta(2, 3, k), stride=s, padding=p, output_padding=op,
                                     dilation=d).shape[-1]
            assert n == ref, (L, k, s, p, op, d)


def test_transpose_phase_plan_covers_exactly_the_taps_that_reach_each_phase():
    for k, s, p, d in itertools.product((1, 3, 4, 8, 12, 16, 20), (1, 2, 3, 4, 5, 6, 8, 10), (0, 1, 2, 5),
                                        (1, 2, 3, 4)):
        step = s // math.gcd(s, d)
        for phase, entry in enumerate(K.transpose_phase_plan(k, s, p, d)):
            reaching = [kk for kk in range(k) if (phase + p - kk * d) % s == 0]
            if entry is None:
                assert reaching == [], (k, s, p, d, phase)
                continue
            k0, base = entry
            assert reaching == list(range(k0, k, step)), (k, s, p, d, phase)
            for u, kk in enumerate(reaching):  # output phase + s·j reads input j + base − u·d/gcd
                j = 7
                assert (phase + s * j + p - kk * d) // s == j + base - u * (d * step // s)


def test_tile_choice_for_model_layers():
    assert K.pick_gemm_config(torch.bfloat16, "ieee", 256, 200).BLOCK_M == 128
    assert K.pick_gemm_config(torch.bfloat16, "ieee", 48, 200).BLOCK_M == 64
    assert K.pick_gemm_config(torch.bfloat16, "ieee", 22, 400).BLOCK_M == 32
    assert K.pick_gemm_config(torch.float32, "tf32", 1536, 200).BLOCK_K == 32
    # exact float32: the swept tiles for stride-1 convs (128×64 while the grid fills the SMs, 64×64 at 3 stages
    # where it would not, 32×128 for 22 rows); transposed and strided convs and fused input activations keep the narrow
    # ones
    assert K.pick_gemm_config(torch.float32, "ieee", 512, 200) == K.GemmConfig(128, 64, 16, 4, 2)
    assert K.pick_gemm_config(torch.float32, "ieee", 1024, 7, sm_count=132) == K.GemmConfig(64, 64, 16, 4, 3)
    assert K.pick_gemm_config(torch.float32, "ieee", 22, 375) == K.GemmConfig(32, 128, 16, 4, 2)
    assert K.pick_gemm_config(torch.float32, "ieee", 512, 200, narrow=True) == K.GemmConfig(64, 64, 16, 4, 2)
    for c in (*K.GEMM_CONFIGS["ieee"], *K.plan.IEEE_NARROW_CONFIGS):
        assert K.plan.fused_input_config(c, torch.float32, "ieee") == K.GemmConfig(32, 64, 16, 4, 2)
    # a short sequence leaves SMs idle at 128-row tiles: the launcher takes smaller ones
    assert K.pick_gemm_config(torch.bfloat16, "ieee", 1536, 1, sm_count=132).BLOCK_M < 128
    for cls, configs in K.GEMM_CONFIGS.items():
        for c in configs:  # tl.dot's minimum on the GPU
            assert min(c.BLOCK_M, c.BLOCK_N, c.BLOCK_K) >= 16, (cls, c)
    assert not K.uses_gemm(1, 1, 3)  # depthwise runs direct
    assert not K.uses_gemm(96, 1, 7)  # single output channel runs direct
    assert K.uses_gemm(22, 256, 12)


def test_every_registered_variant_is_a_config_the_launcher_has():
    from tilewave.harness.catalogue import load_all_kernels
    from tilewave.spec import REGISTRY
    load_all_kernels()
    tiles = {(c.BLOCK_M, c.BLOCK_N, c.BLOCK_K) for table in (K.GEMM_CONFIGS, K.TAP_CONFIGS, K.INTERLEAVED_CONFIGS,
                                                             {"ieee narrow": K.plan.IEEE_NARROW_CONFIGS})
             for cs in table.values() for c in cs}
    for name in ("conv1d", "conv1d_transpose", "conv1d_transpose_depthwise", "conv1d_fused"):
        variants = REGISTRY[name].variants()
        assert variants, name
        for v in variants:
            ce = v.constexprs
            if "BLOCK_K" in ce:
                assert (ce["BLOCK_M"], ce["BLOCK_N"], ce["BLOCK_K"]) in tiles
                assert v.expect_mma == (ce["PRECISION"] != "ieee" or v.signature["x_ptr"] != "*fp32"), v.name
            elif v.fn is K.tap._time_major_pad_kernel:
                assert (ce["BLOCK_C"], ce["BLOCK_T"]) == K.TIME_MAJOR_PAD_BLOCK
            elif v.fn is K.transpose._interleave_phases_kernel:
                assert ce["BLOCK_J"] == K.interleave_block(ce["S"]), v.name
            else:
                assert (ce["BLOCK_C"], ce["BLOCK_T"]) in K.DIRECT_CONFIGS


def test_tap_kernel_takes_tensor_core_calls_with_contiguous_taps():
    assert K.uses_tap_kernel(torch.bfloat16, "ieee", False, 1)
    assert K.uses_tap_kernel(torch.float32, "tf32x3", True, 8)
    assert K.uses_tap_kernel(torch.float16, "ieee", True, 4)
    assert not K.uses_tap_kernel(torch.float32, "ieee", False, 1)  # exact float32: FMA gather kernel
    assert not K.uses_tap_kernel(torch.bfloat16, "ieee", False, 6)  # strided conv: taps are not shifts
    assert K.tap_mode(torch.zeros(1, 1, 1)) == "pointer"
    assert K.tap_kernel_fits(torch.zeros(1, 30, 8), 3)  # the interpreter: pointer loads, any grouping
    for configs in K.TAP_CONFIGS.values():
        for c in configs:  # TMA boxes: at most 256 per dimension; tl.dot's minimum 16
            assert 16 <= min(c.BLOCK_M, c.BLOCK_N, c.BLOCK_K) and max(c.BLOCK_M, c.BLOCK_N, c.BLOCK_K) <= 256


def test_tap_tile_choice_for_model_layers():
    pick = K.pick_tap_config
    assert (pick(torch.bfloat16, "ieee", 1536, 16384, 1, False).BLOCK_N, pick(torch.bfloat16, "ieee", 1536, 16384, 1,
                                                                              False).BLOCK_M) == (256, 128)
    assert pick(torch.bfloat16, "ieee", 1536, 500, 1, False).BLOCK_N == 128  # short sequence: more, smaller tiles
    assert pick(torch.float32, "tf32x3", 768, 3752, 1, False).BLOCK_K == 32
    assert pick(torch.float32, "tf32x3", 1536, 16384, 1, False) == K.TAP_CONFIGS["tf32x3"][0]  # 128x256 spills
    assert pick(torch.bfloat16, "ieee", 256, 8000, 1, True).BLOCK_N <= K.TAP_FUSED_MAX_N  # fused: no spilling tile
    assert pick(torch.float16, "ieee", 64, 16, 1, False) == K.TAP_CONFIGS["16bit"][-1]  # tiny: the smallest


@pytest.mark.parametrize("transposed, stride, dilation, groups", [(False, 1, 3, 1), (False, 1, 1, 2),
                                                                   (True, 3, 2, 1), (True, 4, 1, 2)])
def test_tap_major_weight_holds_each_phase_tap_and_channel(transposed, stride, dilation, groups):
    C_in, C_out, K_, pad, bk = 40, 24, 7, 2, 16
    gen = torch.Generator().manual_seed(6)
    shape = (C_in, C_out // groups, K_) if transposed else (C_out, C_in // groups, K_)
    w = torch.randn(*shape, generator=gen)
    packed, bases, U, C_in_pad = K.pack._packed_tap_weight(w, transposed, groups, stride, pad, dilation, bk)
    C_in_g, C_out_g = C_in // groups, C_out // groups
    assert C_in_pad % bk == 0 and C_in_pad >= C_in_g
    phases = stride if transposed else 1
    p5 = packed.reshape(groups, phases, C_out_g, U, C_in_pad)
    assert torch.all(p5[..., C_in_g:] == 0)  # channel padding: what a TMA box reads past the group is weighted 0
    plan = K.transpose_phase_plan(K_, stride, pad, dilation) if transposed else [(0, -pad)]
    step = stride // math.gcd(stride, dilation) if transposed else 1
    for g in range(groups):
        for phase, entry in enumerate(plan):
            if entry is None:
                assert torch.all(p5[g, phase] == 0)
                continue
            for u in range(U):
                k = entry[0] + u * step
                got = p5[g, phase, :, u, :C_in_g]
                if k >= K_:
                    assert torch.all(got == 0)
                elif transposed:
                    assert torch.equal(got, w[g * C_in_g:(g + 1) * C_in_g, :, k].T)
                    assert int(bases[phase]) == entry[1]
                else:
                    assert torch.equal(got, w[g * C_out_g:(g + 1) * C_out_g, :, k])
    assert K.pack._packed_tap_weight(w, transposed, groups, stride, pad, dilation, bk)[0] is packed  # cached


def test_transposed_form_and_tile_choice_for_model_layers():
    # (C_in, K, stride, padding) -> interleaved? as measured on the H200 (tune_convt round 1)
    il = K.uses_interleaved_phases
    assert il(torch.bfloat16, "ieee", 192, 6, 3, 0, 1)  # decoder x3: 443 -> 95 us
    assert il(torch.bfloat16, "ieee", 1024, 16, 8, 0, 1)  # large x8: 695 -> 224 us
    assert il(torch.bfloat16, "ieee", 48, 4, 2, 1, 1)  # BigVGAN x2 48->24: 149 -> 122 us
    assert il(torch.float16, "ieee", 256, 12, 6, 3, 1)  # Kokoro x6: 146 -> 86 us
    assert not il(torch.bfloat16, "ieee", 1536, 8, 4, 2, 1)  # BigVGAN x4 1536->768: per phase 101 vs 139 us
    assert not il(torch.bfloat16, "ieee", 512, 20, 10, 5, 1)  # Kokoro x10: zero weights add 1434 MACs/output
    assert il(torch.float32, "tf32x3", 1024, 16, 8, 0, 1) and not il(torch.float32, "tf32", 1024, 16, 8, 0, 1)
    assert K.interleaved_extra_macs(512, 20, 10, 5, 1) == pytest.approx(512 * (3 * 16 / 10 - 2))
    pick = K.pick_interleaved_config
    wide, square = K.INTERLEAVED_CONFIGS["16bit"][:2]
    assert pick(torch.bfloat16, "ieee", 2 * 1024, 512 * 8, 8193, 1, False) == wide  # large x8: long reduction
    assert pick(torch.bfloat16, "ieee", 2 * 192, 96 * 4, 80000, 1, False) == square  # decoder x3: short one
    assert pick(torch.bfloat16, "ieee", 2 * 1536, 768 * 8, 501, 1, False) == square  # decoder x8 L500: few tiles
    assert pick(torch.bfloat16, "ieee", 2 * 1024, 512 * 8, 8193, 1, True).BLOCK_N <= K.TAP_FUSED_MAX_N


@pytest.mark.parametrize("stride, K_, pad, dilation, groups", [(2, 4, 1, 1, 1), (3, 5, 2, 2, 1), (4, 6, 1, 2, 2),
                                                              (10, 20, 5, 1, 1)])
def test_interleaved_weight_puts_each_phase_tap_at_its_input_shift(stride, K_, pad, dilation, groups):
    C_in, C_out_g, bk = 40, 12, 16
    w = torch.randn(C_in, C_out_g, K_, generator=torch.Generator().manual_seed(5))
    phase_pad = triton_next_pow2(stride)
    packed, lowest, U, C_in_pad = K.pack._packed_interleaved_weight(w, groups, stride, pad, dilation, bk, phase_pad)
    C_in_g = C_in // groups
    p5 = packed.reshape(groups, C_out_g, phase_pad, U, C_in_pad)
    expect = torch.zeros_like(p5)
    for phase in range(stride):  # the definition: output φ + s·j takes x[i]·W[.., k] where i·s + k·d − p = φ + s·j
        for k in range(K_):
            if (phase + pad - k * dilation) % stride == 0:
                shift = (phase + pad - k * dilation) // stride  # i − j
                for g in range(groups):
                    expect[g, :, phase, shift - lowest, :C_in_g] = w[g * C_in_g:(g + 1) * C_in_g, :, k].T
    assert torch.equal(p5, expect)  # also: zero rows for the padded phases, zero shifts, zero channel padding
    assert (p5.abs().sum(dim=(0, 1, 2, 4)) > 0).all()  # U' is the span of the shifts, no empty tap at the ends


def triton_next_pow2(n):
    return 1 << (n - 1).bit_length()


@pytest.mark.parametrize("form", ["interleaved", "per phase, phase-major", "per phase, strided stores"])
@pytest.mark.parametrize("mode", ["pointer", "tma"])
@pytest.mark.parametrize("stride, K_, pad, out_pad, dilation, groups, act",
                         [(2, 4, 1, 0, 1, 1, "none"), (3, 6, 0, 0, 1, 1, "leaky_relu"), (4, 7, 2, 1, 2, 2, "none"),
                          (10, 20, 5, 0, 1, 1, "none")])
def test_transposed_conv_per_phase_and_interleaved_match_pytorch(monkeypatch, form, mode, stride, K_, pad,
                                                                 out_pad, dilation, groups, act):
    # every form of the tap kernel on every stride class (dense 2/4, padded 3/10), whichever the launcher picks
    strides = frozenset(range(2, 17)) if form == "interleaved" else frozenset()
    monkeypatch.setattr(K.plan, "INTERLEAVED_STRIDES", {cls: strides for cls in K.INTERLEAVED_STRIDES})
    if form == "per phase, strided stores":
        monkeypatch.setattr(K.plan, "PHASE_MAJOR_CLASSES", frozenset())
    monkeypatch.setattr(K.plan, "INTERLEAVED_MAX_EXTRA_MACS", math.inf)
    monkeypatch.setattr(K.plan, "tap_mode", lambda x: mode)
    gen = torch.Generator().manual_seed(11)
    x = _rand(2, 32, 9, gen=gen) * torch.tensor([1.0, 100.0], device=KERNEL_DEVICE)[:, None, None]
    w = _rand(32, 32 // groups, K_, gen=gen) / (32 * K_ / stride) ** 0.5
    b = _rand(32, gen=gen)
    y = K.conv1d_fused(x, w, b, stride, pad, dilation, groups, act=act, slope=0.2, transposed=True,
                       output_padding=out_pad, precision="tf32x3")
    x64 = F.leaky_relu(x.cpu().double(), 0.2) if act == "leaky_relu" else x.cpu().double()
    ref = F.conv_transpose1d(x64, w.cpu().double(), b.cpu().double(), stride, pad, out_pad, groups, dilation)
    assert scaled_max_error(y[:1], ref[:1]) < 1e-5 and scaled_max_error(y[1:], ref[1:]) < 1e-5


def test_time_major_copy_is_the_transposed_input_between_zero_rows():
    gen = torch.Generator().manual_seed(9)
    x = _rand(2, 5, 70, gen=gen)  # 5 channels: rows padded to a 16-byte pitch of 8
    xt, left = K.tap._x_time_major(x, -3, 81)
    assert left == 3 and tuple(xt.shape) == (2, 3 + 70 + 11, 8)
    ref = torch.zeros(2, 84, 8, device=KERNEL_DEVICE)
    ref[:, 3:73, :5] = x.transpose(1, 2)
    assert torch.equal(xt[..., :5], ref[..., :5])


@pytest.mark.parametrize("device_descriptors", [True, False])
@pytest.mark.parametrize("transposed, K_, stride, padding, dilation, output_padding, dtype",
                         [(False, 7, 1, 9, 3, 0, torch.float32), (True, 5, 3, 2, 2, 1, torch.float32),
                          (True, 16, 8, 0, 1, 0, torch.float32), (False, 5, 1, 4, 2, 0, torch.float16)])
def test_time_major_descriptor_path_keeps_padding_and_batches_apart(monkeypatch, device_descriptors, transposed, K_,
                                                                    stride, padding, dilation, output_padding, dtype):
    # The interpreter follows descriptor loads whose last-dim offset is 16-byte aligned, which the time-major
    # copy's channel offsets are: the TMA path runs here as on sm_90. Batch 1 is 100x larger, so a
    # box reaching across the batch boundary instead of into the zero rows would show.
    monkeypatch.setattr(K.plan, "tap_mode", lambda x: "tma")
    gen = torch.Generator().manual_seed(7)
    x = (_rand(2, 32, 23, gen=gen) * torch.tensor([1.0, 100.0], device=KERNEL_DEVICE)[:, None, None]).to(dtype)
    w = (_rand(*((32, 16, K_) if transposed else (16, 32, K_)), gen=gen) / (32 * K_) ** 0.5).to(dtype)
    y = K.conv1d_fused(x, w, None, stride, padding, dilation, transposed=transposed, output_padding=output_padding,
                       precision="tf32x3", device_descriptors=device_descriptors)
    x64, w64 = x.cpu().double(), w.cpu().double()
    ref = (F.conv_transpose1d(x64, w64, None, stride, padding, output_padding, 1, dilation) if transposed
           else F.conv1d(x64, w64, None, stride, padding, dilation))
    assert scaled_max_error(y[:1], ref[:1]) < (1e-5 if dtype == torch.float32 else 2e-3)


@pytest.mark.parametrize("transposed", [False, True])
def test_persistent_tap_launch_walks_every_tile(monkeypatch, transposed):
    # three programs for 16-32 tiles: each program takes every third tile, in one flattened loop (a per-phase
    # transposed conv is persistent only with its phases stored strided, not through the phase-major scratch)
    monkeypatch.setattr(K.plan, "PHASE_MAJOR_CLASSES", frozenset())
    monkeypatch.setattr(K.plan, "_sm_count", lambda device: 3)
    gen = torch.Generator().manual_seed(8)
    x = _rand(2, 32, 150, gen=gen).half()
    w = (_rand(*((32, 24, 4) if transposed else (48, 32, 3)), gen=gen) / 10).half()
    every_tile = {"16bit": 1, "tf32": 1, "tf32x3": 1}
    y = K.conv1d_fused(x, w, None, 2 if transposed else 1, 1, transposed=transposed, tap_persistent=every_tile)
    if transposed:
        ref = F.conv_transpose1d(x.cpu().double(), w.cpu().double(), None, 2, 1)
    else:
        ref = F.conv1d(x.cpu().double(), w.cpu().double(), None, 1, 1)
    assert scaled_max_error(y, ref) < 2e-3


def _rand(*shape, gen):
    return torch.randn(*shape, generator=gen).to(KERNEL_DEVICE)


def test_transposed_weight_is_repacked_once_and_again_after_an_update():
    gen = torch.Generator().manual_seed(0)
    w = _rand(32, 16, 4, gen=gen)
    first = K.pack._packed_transpose_weight(w, 1, 2, 1, 1)
    assert K.pack._packed_transpose_weight(w, 1, 2, 1, 1) is first
    w.mul_(2.0)  # an in-place update bumps the version: the cache must not serve stale weights
    again = K.pack._packed_transpose_weight(w, 1, 2, 1, 1)
    assert again is not first
    assert torch.equal(again[0], first[0] * 2.0)
    x = _rand(1, 32, 9, gen=gen)
    assert scaled_max_error(K.conv1d_transpose(x, w, None, 2, 1), F.conv_transpose1d(x, w, None, 2, 1)) < 1e-5


def test_depthwise_upsampler_keeps_pytorchs_output_padding_edge():
    # StyleTTS2's ConvTranspose1d(C, C, 3, stride 2, padding 1, output_padding 1, groups C): length 2L, and
    # the last sample is w[2]·x[L−1] + bias (the only tap that reaches it).
    gen = torch.Generator().manual_seed(1)
    C, L = 24, 19
    x, w, b = _rand(2, C, L, gen=gen), _rand(C, 1, 3, gen=gen), _rand(C, gen=gen)
    y = K.conv1d_transpose_depthwise(x, w, b, 2, 1, 1)
    assert y.shape == (2, C, 2 * L)
    ref = F.conv_transpose1d(x, w, b, 2, 1, 1, C)
    assert scaled_max_error(y, ref) < 1e-6
    assert torch.allclose(y[..., -1], w[:, 0, 2] * x[..., -1] + b, atol=1e-6)


def test_unbatched_input_and_out_argument():
    gen = torch.Generator().manual_seed(2)
    x, w = _rand(16, 30, gen=gen), _rand(20, 16, 3, gen=gen)
    out = torch.full((20, 30), float("nan"), device=KERNEL_DEVICE)
    y = K.conv1d(x, w, None, 1, 1, out=out)
    assert y.shape == (20, 30) and y.data_ptr() == out.data_ptr()
    assert scaled_max_error(out, F.conv1d(x, w, None, 1, 1)) < 1e-5


def test_exact_float32_is_exact_on_a_long_reduction():
    # 'ieee' must not fall back to tf32 (~1e-3): a 3·C-term reduction checked at float32 rounding level.
    C, L = (256, 513) if KERNEL_DEVICE == "cuda" else (32, 40)
    gen = torch.Generator().manual_seed(3)
    x, w = _rand(1, C, L, gen=gen), _rand(C, C, 3, gen=gen) / (3 * C) ** 0.5
    ref = F.conv1d(x.cpu().double(), w.cpu().double(), None, 1, 1)
    assert scaled_max_error(K.conv1d(x, w, None, 1, 1, precision="ieee"), ref) < 5e-5  # tf32: ~1e-3


def test_argument_errors_say_what_to_fix():
    x, w = torch.zeros(1, 16, 8), torch.zeros(16, 16, 3)
    with pytest.raises(ValueError, match="output_padding"):
        K.conv1d_transpose(x, w, None, 2, 1, output_padding=2)
    with pytest.raises(ValueError, match="dtype"):
        K.conv1d(x, w.half())
    with pytest.raises(ValueError, match="divisible by groups"):
        K.conv1d(x, w, groups=3)
    with pytest.raises(ValueError, match="too short"):
        K.conv1d(torch.zeros(1, 16, 2), w, dilation=5)
    with pytest.raises(ValueError, match="precision"):
        K.conv1d(x, w, precision="fast")
    with pytest.raises(ValueError, match="alpha"):
        K.conv1d_fused(x, w, act="snake")


def test_ops_fall_back_to_pytorch_on_cpu_and_match_it():
    gen = torch.Generator().manual_seed(4)
    x, w, b = torch.randn(2, 8, 25, generator=gen), torch.randn(6, 4, 5, generator=gen), torch.randn(6, generator=gen)
    wt = torch.randn(8, 3, 6, generator=gen)
    alpha, res = torch.rand(8, generator=gen) + 0.1, torch.randn(2, 6, 25, generator=gen)
    reset_placements()
    assert torch.equal(ops.conv1d(x, w, b, 1, 2, 1, 2), F.conv1d(x, w, b, 1, 2, 1, 2))
    assert torch.equal(ops.conv1d(x, w, b, padding="same", groups=2), F.conv1d(x, w, b, padding="same", groups=2))
    assert torch.equal(ops.conv1d_transpose(x, wt, None, 3, 1, 2), F.conv_transpose1d(x, wt, None, 3, 1, 2))
    fused = ops.conv1d_fused(x, w, b, 1, 2, 1, 2, act="snake", alpha=alpha, residual=res, scale=0.5)
    snake = x + torch.sin(alpha[:, None] * x) ** 2 / (alpha[:, None] + 1e-9)
    assert torch.allclose(fused, (F.conv1d(snake, w, b, 1, 2, 1, 2) + res) * 0.5, atol=1e-6)
    leaky = ops.conv1d_fused(x, wt, None, 3, 1, act="leaky_relu", slope=0.1, transposed=True, output_padding=2)
    assert torch.equal(leaky, F.conv_transpose1d(F.leaky_relu(x, 0.1), wt, None, 3, 1, 2))
    where = {(op, place, why) for op, place, why, _ in placements()}
    assert where == {("conv1d", "torch", "tensors on cpu"), ("conv1d_transpose", "torch", "tensors on cpu"),
                     ("conv1d_fused", "torch", "tensors on cpu")}


def test_ops_padding_forms_the_kernel_cannot_express_stay_on_pytorch():
    w = torch.zeros(4, 4, 4)
    assert ops._padding("same", w, 1, 1, False) is None  # 3 padded samples cannot be split evenly
    assert ops._padding("same", torch.zeros(4, 4, 7), 1, 3, False) == 9
    assert ops._padding("valid", w, 1, 1, False) == 0
    assert ops._padding((2,), w, 1, 1, False) == 2


def test_ops_run_a_vocoder_stage_where_the_tensors_are():
    # leaky_relu → ×2 upsampler → snake + dilated conv + residual, through the ops the models call:
    # Triton on CUDA (float32 exact by default), PyTorch on the CPU; both match the float64 composition.
    gen = torch.Generator().manual_seed(5)
    x = _rand(1, 32, 21, gen=gen)
    w_up, b_up = _rand(32, 16, 4, gen=gen) / 4, _rand(16, gen=gen)
    w_rb, alpha = _rand(16, 16, 3, gen=gen) / 7, torch.rand(16, generator=gen).add_(0.1).to(KERNEL_DEVICE)
    reset_placements()
    up = ops.conv1d_transpose(F.leaky_relu(x, 0.1), w_up, b_up, 2, 1)
    y = ops.conv1d_fused(up, w_rb, None, padding=3, dilation=3, act="snake", alpha=alpha, residual=up)
    d = {k: v.cpu().double() for k, v in dict(x=x, w_up=w_up, b_up=b_up, w_rb=w_rb, alpha=alpha).items()}
    up64 = F.conv_transpose1d(F.leaky_relu(d["x"], 0.1), d["w_up"], d["b_up"], 2, 1)
    a = d["alpha"][:, None]
    ref = F.conv1d(up64 + torch.sin(a * up64) ** 2 / (a + 1e-9), d["w_rb"], None, 1, 3, 3) + up64
    assert scaled_max_error(y, ref) < 1e-5
    place = "triton" if KERNEL_DEVICE == "cuda" else "torch"
    assert {(op, where) for op, where, _, _ in placements()} == {("conv1d_transpose", place),
                                                                 ("conv1d_fused", place)}


def test_ops_pass_pytorchs_arguments_to_the_kernels_in_order(monkeypatch):
    # Force the Triton branch (the interpreter on the CPU): every torch-style argument must land in the
    # right kernel parameter, including the transposed conv's (output_padding, groups, dilation) order.
    monkeypatch.setattr(ops, "use_triton", lambda *a, **k: True)
    gen = torch.Generator().manual_seed(6)
    x = _rand(2, 32, 13, gen=gen)
    w, wt, b = _rand(32, 16, 3, gen=gen) / 7, _rand(32, 16, 5, gen=gen) / 5, _rand(32, gen=gen)
    got = ops.conv1d(x, w, b, 1, "same", 2, 2)
    assert scaled_max_error(got, F.conv1d(x, w, b, 1, "same", 2, 2)) < 1e-5
    got = ops.conv1d_transpose(x, wt, b, 3, 2, 1, 2, 2)
    assert scaled_max_error(got, F.conv_transpose1d(x, wt, b, 3, 2, 1, 2, 2)) < 1e-5
    got = ops.conv1d_fused(x, w, None, 2, 1, 1, 2, act="leaky_relu", slope=0.2, scale=2.0)
    assert scaled_max_error(got, 2.0 * F.conv1d(F.leaky_relu(x, 0.2), w, None, 2, 1, 1, 2)) < 1e-5


def test_snake_is_fused_only_while_few_loads_repeat_it(monkeypatch):
    calls = []
    real_snake = activation.snake
    monkeypatch.setattr(activation, "snake", lambda *a, **k: calls.append(1) or real_snake(*a, **k))
    gen = torch.Generator().manual_seed(7)
    x, alpha = _rand(1, 16, 20, gen=gen), torch.rand(16, generator=gen).add_(0.1).to(KERNEL_DEVICE)
    snake = x + torch.sin(alpha[:, None] * x) ** 2 / (alpha[:, None] + 1e-9)
    # 16 output channels: one tile, k repeats; the gather kernel (ieee) and the tap kernel (tf32x3)
    for (k, separate_pass), precision in itertools.product(((3, False), (7, True)), ("ieee", "tf32x3")):
        w = _rand(16, 16, k, gen=gen) / (4 * k ** 0.5)
        calls.clear()
        y = K.conv1d_fused(x, w, None, padding=k // 2, act="snake", alpha=alpha, precision=precision)
        assert bool(calls) == separate_pass, (k, precision)
        assert scaled_max_error(y, F.conv1d(snake, w, None, padding=k // 2)) < 1e-5
