"""Vision front-ends: the float64 oracles against stock PyTorch on random (ragged, odd, up- and
down-scaling) shapes, properties the registry cases can't express, and the op layer's placement.

The registry bridge (tests/harness/test_kernels.py) already runs every kernel case against its oracle;
here the oracles themselves are checked against torch.nn.functional, so a wrong oracle cannot pass a
wrong kernel.
"""
import random

import pytest
import torch

from tests.conftest import KERNEL_DEVICE
from tilewave import ops
from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import conv2d as KC
from tilewave.kernels import vision as KV
from tilewave.ops import vision as OV
from tilewave.reference.vision import MODES

SEEDS = range(6)
F32 = tolerance("float32", "pointwise")
F32_SUM = tolerance("float32", "reduction")


def _gen(seed):
    return random.Random(seed), torch.Generator().manual_seed(seed)


def _close(peer_out, oracle_out, tol, seed):
    err = scaled_max_error(peer_out, oracle_out)
    assert err <= tol, f"max error {err:.2e} > {tol:.0e} (seed {seed})"


# ------------------------------------------------------------------------------------------------
# oracles vs stock PyTorch (CPU, float32 peer against float64 oracle on the same float32 inputs)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", SEEDS)
def test_resize_oracle_matches_interpolate(seed, mode):
    rng, gen = _gen(seed)
    H, W = rng.randint(1, 41), rng.randint(1, 41)
    if seed % 2:  # upscale
        size = (rng.randint(H, 3 * H + 2), rng.randint(W, 3 * W + 2))
    else:  # downscale, down to a single output pixel
        size = (rng.randint(1, H), rng.randint(1, W))
    batch = (2,) if seed % 3 == 0 else ()
    image = torch.rand(batch + (H, W, 3), generator=gen)
    mean, std = torch.rand(3, generator=gen) * 0.3 + 0.3, torch.rand(3, generator=gen) * 0.4 + 0.2
    ref = KV.resize_normalize_oracle(image.double(), size, mean.double(), std.double(), mode)
    _close(KV.resize_normalize_torch(image, size, mean, std, mode), ref, F32, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_depthwise_oracle_matches_conv2d(seed):
    rng, gen = _gen(seed)
    kh, kw = rng.randint(1, 7), rng.randint(1, 7)
    N, H, W, C = rng.randint(1, 3), rng.randint(kh, 20), rng.randint(kw, 20), rng.randint(1, 37)
    stride, padding = (rng.randint(1, 3), rng.randint(1, 3)), (rng.randint(0, kh), rng.randint(0, kw))
    x = torch.randn(N, H, W, C, generator=gen)
    w = torch.randn(C, kh, kw, generator=gen)
    b = torch.randn(C, generator=gen) if seed % 2 else None
    ref = KC.depthwise_conv2d_nhwc_oracle(x.double(), w.double(), None if b is None else b.double(), stride, padding)
    _close(KC.depthwise_conv2d_nhwc_torch(x, w, b, stride, padding), ref, F32_SUM, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_avg_pool_oracle_matches_avg_pool2d(seed):
    rng, gen = _gen(seed)
    k = (rng.randint(1, 5), rng.randint(1, 5))
    stride = None if seed % 3 == 0 else (rng.randint(1, 3), rng.randint(1, 3))
    padding = (rng.randint(0, k[0] // 2), rng.randint(0, k[1] // 2))
    x = torch.randn(rng.randint(1, 2), rng.randint(k[0], 19), rng.randint(k[1], 19), rng.randint(1, 33),
                    generator=gen)
    ref = KV.avg_pool2d_nhwc_oracle(x.double(), k, stride, padding)
    _close(KV.avg_pool2d_nhwc_torch(x, k, stride, padding), ref, F32, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_im2col_oracle_matches_unfold(seed):
    rng, gen = _gen(seed)
    p = rng.randint(1, 9)
    x = torch.randn(rng.randint(1, 2), rng.randint(1, 4), rng.randint(p, 5 * p + 3), rng.randint(p, 5 * p + 3),
                    generator=gen)
    patches = torch.nn.functional.unfold(x, p, stride=p).transpose(1, 2)  # [N, L, C p p], same column order
    assert torch.equal(KC.im2col_patch_oracle(x.double(), p), patches.double())
    assert torch.equal(KC.im2col_patch_torch(x, p), patches)


@pytest.mark.parametrize("seed", SEEDS)
def test_frame_diff_oracle_matches_adaptive_pool(seed):
    rng, gen = _gen(seed)
    H, W = rng.randint(1, 50), rng.randint(1, 50)
    grid = (rng.randint(1, H), rng.randint(1, W))
    f0, f1 = torch.rand(H, W, 3, generator=gen), torch.rand(H, W, 3, generator=gen)
    ref = KV.frame_diff_luma_oracle(f0.double(), f1.double(), grid)
    _close(KV.frame_diff_luma_torch(f0, f1, grid), ref, F32_SUM, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_pos_emb_and_transpose_oracles_match_torch(seed):
    rng, gen = _gen(seed)
    Hg, W, D = rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 70)
    tok = torch.randn(rng.randint(1, 3), Hg * W, D, generator=gen)
    px, py = torch.randn(W, D, generator=gen), torch.randn(Hg, D, generator=gen)
    _close(KV.pos_emb_2d_add_torch(tok, px, py), KV.pos_emb_2d_add_oracle(tok.double(), px.double(), py.double()),
           F32, seed)
    x = torch.randn(rng.randint(1, 30), rng.randint(1, 6), D, generator=gen)
    assert torch.equal(KV.transpose_th_oracle(x), KV.transpose_th_torch(x))


# ------------------------------------------------------------------------------------------------
# kernel properties (interpreter on the CPU, the GPU where present)
# ------------------------------------------------------------------------------------------------
def test_transpose_is_bit_exact_in_every_dtype():
    gen = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.randn(19, 3, 40, generator=gen).to(dtype).to(KERNEL_DEVICE)
        assert torch.equal(KV.transpose_th(x).cpu(), x.cpu().transpose(0, 1)), dtype


@pytest.mark.parametrize("mode", MODES)
def test_resize_to_same_size_only_normalizes(mode):
    # half-pixel centres map every output pixel onto an input pixel: both filters reduce to identity
    gen = torch.Generator().manual_seed(1)
    image = torch.rand(7, 10, 3, generator=gen).to(KERNEL_DEVICE)
    mean, std = [0.5, 0.4, 0.3], [0.25, 0.5, 0.2]
    out = KV.resize_normalize(image, (7, 10), mean, std, mode).cpu()
    expected = (image.cpu().permute(2, 0, 1) - torch.tensor(mean).view(3, 1, 1)) / torch.tensor(std).view(3, 1, 1)
    _close(out, expected.double(), F32, 1)


def test_bicubic_keeps_a_constant_image_constant_with_clamped_taps():
    # edge taps are clamped, not renormalised: the Keys weights still sum to 1, so a constant stays
    image = torch.full((5, 4, 3), 0.25).to(KERNEL_DEVICE)
    out = KV.resize_normalize(image, (11, 3), [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], "bicubic").cpu()
    _close(out, torch.full((3, 11, 3), 0.25, dtype=torch.float64), F32, 0)


def test_bicubic_overshoot_is_not_clamped():
    # a step edge rings under Keys' kernel; PyTorch keeps values outside [0, 1] and so must we
    image = torch.zeros(4, 8, 3)
    image[:, 4:] = 1.0
    out = KV.resize_normalize(image.to(KERNEL_DEVICE), (4, 19), [0.0] * 3, [1.0] * 3, "bicubic").cpu()
    assert out.min() < 0 and out.max() > 1
    _close(out, KV.resize_normalize_oracle(image.double(), (4, 19), [0.0] * 3, [1.0] * 3, "bicubic"), F32, 0)


def test_avg_pool_corner_divides_by_in_bounds_taps():
    x = torch.ones(1, 4, 5, 16).to(KERNEL_DEVICE)
    out = KV.avg_pool2d_nhwc(x, 3, 1, 1).cpu()
    assert torch.equal(out, torch.ones(1, 4, 5, 16)), "count_include_pad=False keeps a constant input constant"


def test_depthwise_centre_tap_is_identity_plus_bias():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(1, 6, 9, 40, generator=gen)
    w = torch.zeros(40, 3, 5)
    w[:, 1, 2] = 1.0
    bias = torch.randn(40, generator=gen)
    out = KC.depthwise_conv2d_nhwc(x.to(KERNEL_DEVICE), w.to(KERNEL_DEVICE), bias.to(KERNEL_DEVICE),
                                   padding=(1, 2)).cpu()
    _close(out, (x + bias).double(), F32, 2)


@pytest.mark.parametrize("average", [False, True])
def test_inf_stays_in_the_windows_that_hold_it(average):
    # an inf reaches exactly the outputs whose window holds it (no zero-weight product, inf * 0 = NaN, anywhere)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(1, 11, 7, 32, generator=gen)
    x[0, 5, 3, 4] = float("inf")
    if average:
        out = KV.avg_pool2d_nhwc(x.to(KERNEL_DEVICE), 3, 1, 1).cpu()
        ref = KV.avg_pool2d_nhwc_torch(x, 3, 1, 1)
    else:
        w = torch.randn(32, 3, 3, generator=gen)
        out = KC.depthwise_conv2d_nhwc(x.to(KERNEL_DEVICE), w.to(KERNEL_DEVICE), padding=1).cpu()
        ref = KC.depthwise_conv2d_nhwc_torch(x, w, None, 1, 1)
    assert torch.equal(out.isfinite(), ref.isfinite())
    finite = ref.isfinite()
    assert finite.sum() == finite.numel() - 9, "the inf reaches exactly the 3x3 outputs around it"
    _close(out[finite], ref[finite].double(), F32_SUM, 3)


# ------------------------------------------------------------------------------------------------
# the op layer and its errors
# ------------------------------------------------------------------------------------------------
def test_ops_run_pytorch_on_cpu_and_record_it():
    gen = torch.Generator().manual_seed(3)
    image = torch.rand(9, 12, 3, generator=gen)
    ops.reset_placements()
    out = OV.resize_normalize(image, (5, 7), [0.5] * 3, [0.5] * 3, "bilinear")
    _close(out, KV.resize_normalize_oracle(image.double(), (5, 7), [0.5] * 3, [0.5] * 3, "bilinear"), F32, 3)
    assert ("resize_normalize", "torch", "tensors on cpu", 1) in ops.placements()
    with ops.backend("triton"), pytest.raises(RuntimeError, match="resize_normalize"):
        OV.resize_normalize(image, (5, 7), [0.5] * 3, [0.5] * 3)


def test_ops_match_their_peers_on_cpu():
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(1, 8, 9, 12, generator=gen)
    w = torch.randn(12, 3, 3, generator=gen)
    assert torch.equal(OV.depthwise_conv2d_nhwc(x, w, None, 1, 1), KC.depthwise_conv2d_nhwc_torch(x, w, None, 1, 1))
    assert torch.equal(OV.avg_pool2d_nhwc(x, 2), KV.avg_pool2d_nhwc_torch(x, 2))
    assert torch.equal(OV.transpose_th(x[0]), x[0].transpose(0, 1))
    assert OV.im2col_patch(x.permute(0, 3, 1, 2).contiguous(), 4).shape == (1, 2 * 2, 12 * 16)
    f = torch.rand(2, 16, 16, 3, generator=gen)
    assert OV.frame_diff_luma(f, f, (2, 4)).abs().max() == 0


@pytest.mark.parametrize("call,message", [
    (lambda: KV.resize_normalize(torch.rand(4, 4, 3), (2, 2), [0.5] * 3, [0.5] * 3, "nearest"), "mode"),
    (lambda: KV.resize_normalize(torch.rand(4, 4, 4), (2, 2), [0.5] * 3, [0.5] * 3), r"\[H, W, 3\]"),
    (lambda: KV.resize_normalize(torch.rand(4, 4, 3), (2, 2), [0.5] * 2, [0.5] * 3), "mean"),
    (lambda: KV.pos_emb_2d_add(torch.rand(6, 8), torch.rand(4, 8), torch.rand(2, 8)), "H\\*W"),
    (lambda: KV.frame_diff_luma(torch.rand(4, 4, 3), torch.rand(4, 4, 3), (5, 2)), "grid"),
    (lambda: KV.avg_pool2d_nhwc(torch.rand(1, 4, 4, 2), 2, 1, 2), "padding"),
    (lambda: KC.depthwise_conv2d_nhwc(torch.rand(1, 4, 4, 2), torch.rand(3, 3, 3)), "weight"),
    (lambda: KC.im2col_patch(torch.rand(1, 3, 8, 8), 9), "patch"),
    (lambda: KV.pos_emb_2d_add(torch.rand(6, 8), torch.rand(3, 8).half(), torch.rand(2, 8)), "dtype"),
    (lambda: KC.im2col_patch(torch.rand(1, 3, 8, 8).transpose(2, 3), 2), "contiguous"),
])
def test_bad_arguments_say_what_was_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_ops_on_the_kernel_device_match_the_oracles():
    # on a GPU machine these take the Triton branch (asserted below); on the CPU, the PyTorch path
    gen = torch.Generator().manual_seed(5)
    dev = KERNEL_DEVICE
    image = torch.rand(2, 11, 14, 3, generator=gen)
    x = torch.randn(1, 7, 9, 32, generator=gen)
    w, b = torch.randn(32, 3, 3, generator=gen), torch.randn(32, generator=gen)
    tok, px, py = (torch.randn(n, 20, generator=gen) for n in (12, 4, 3))
    f0, f1 = torch.rand(20, 30, 3, generator=gen), torch.rand(20, 30, 3, generator=gen)
    ops.reset_placements()
    checks = [
        (OV.resize_normalize(image.to(dev), (6, 19), [0.4] * 3, [0.3] * 3, "bicubic"),
         KV.resize_normalize_oracle(image.double(), (6, 19), [0.4] * 3, [0.3] * 3, "bicubic"), F32),
        (OV.depthwise_conv2d_nhwc(x.to(dev), w.to(dev), b.to(dev), 2, 1),
         KC.depthwise_conv2d_nhwc_oracle(x.double(), w.double(), b.double(), 2, 1), F32_SUM),
        (OV.avg_pool2d_nhwc(x.to(dev), 3, 2, 1), KV.avg_pool2d_nhwc_oracle(x.double(), 3, 2, 1), F32),
        (OV.pos_emb_2d_add(tok.to(dev), px.to(dev), py.to(dev)),
         KV.pos_emb_2d_add_oracle(tok.double(), px.double(), py.double()), F32),
        (OV.frame_diff_luma(f0.to(dev), f1.to(dev), (3, 4)),
         KV.frame_diff_luma_oracle(f0.double(), f1.double(), (3, 4)), F32_SUM),
        (OV.transpose_th(x[0].to(dev)), KV.transpose_th_oracle(x[0].double()), 0.0),
        (OV.im2col_patch(x.permute(0, 3, 1, 2).contiguous().to(dev), 3),
         KC.im2col_patch_oracle(x.permute(0, 3, 1, 2).double(), 3), 0.0),
    ]
    for i, (out, ref, tol) in enumerate(checks):
        _close(out, ref, tol, i)
    where = {op: w for op, w, _, _ in ops.placements()}
    assert len(where) == len(checks)
    assert set(where.values()) == {"triton" if dev == "cuda" else "torch"}, where
