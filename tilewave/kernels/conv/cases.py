"""Registration: tests (small shapes on the interpreter, model shapes on the GPU), benches, AOT variants."""
from __future__ import annotations

import torch
import torch.nn.functional as F
import triton

from tilewave.kernels._common import randn
from tilewave.kernels.conv.direct import _conv_direct_kernel
from tilewave.kernels.conv.gemm import _conv_gemm_kernel
from tilewave.kernels.conv.launch import conv1d, conv1d_fused, conv1d_transpose, conv1d_transpose_depthwise
from tilewave.kernels.conv.plan import (DEVICE_DESCRIPTORS, DIRECT_CONFIGS, GEMM_CONFIGS, IEEE_NARROW_CONFIGS,
                                        GemmConfig, INTERLEAVED_CONFIGS, INTERLEAVED_STRIDES, PHASE_MAJOR_CLASSES,
                                        TAP_CONFIGS, TAP_FUSED_MAX_N, TAP_PERSISTENT, fused_input_config)
from tilewave.kernels.conv.reference import conv1d_fused_oracle, conv1d_oracle, conv1d_transpose_oracle
from tilewave.kernels.conv.tap import TIME_MAJOR_PAD_BLOCK, _conv_tap_kernel, _time_major_pad_kernel
from tilewave.kernels.conv.transpose import (_interleave_phases_kernel, conv1d_out_len, conv1d_transpose_out_len,
                                             interleave_block)
from tilewave.reference.conv import conv1d_fused_torch
from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register


def _conv_inputs(p, dtype, device, gen):
    """x ~ N(0, 1), weights scaled by 1/√fan-in so outputs stay O(1) at every channel count."""
    G, K, C_in, C_out = p.get("groups", 1), p["K"], p["C_in"], p["C_out"]
    transposed = p.get("transposed", False)
    stride = p.get("stride", 1)
    fan_in = (C_in // G) * (triton.cdiv(K, stride) if transposed else K)
    x = randn((p.get("B", 1), C_in, p["L"]), dtype, device, gen)
    w_shape = (C_in, C_out // G, K) if transposed else (C_out, C_in // G, K)
    inputs = {"x": x, "weight": randn(w_shape, dtype, device, gen, scale=fan_in ** -0.5),
              "bias": randn((C_out,), dtype, device, gen, scale=0.5) if p.get("bias", True) else None,
              "stride": stride, "padding": p.get("padding", 0), "dilation": p.get("dilation", 1)}
    if transposed:
        inputs["output_padding"] = p.get("output_padding", 0)
    return inputs


def _with_groups_precision(p, inputs):
    return {**inputs, "groups": p.get("groups", 1), "precision": p.get("precision", "ieee")}


def _positive(n, dtype, device, gen):
    # trained snake alphas/betas are positive and O(1)
    return randn((n,), torch.float32, "cpu", gen).abs_().add_(0.1).to(dtype).to(device)


def _fused_inputs(p, dtype, device, gen):
    inputs = _with_groups_precision(p, _conv_inputs(p, dtype, device, gen))
    inputs.update(transposed=p.get("transposed", False), act=p.get("act", "none"), slope=p.get("slope", 0.0),
                  scale=p.get("scale", 1.0), alpha=None, beta=None, residual=None)
    C_in = p["C_in"]
    if inputs["act"] == "snake":
        inputs["alpha"] = _positive(C_in, dtype, device, gen)
        if p.get("beta", False):
            inputs["beta"] = _positive(C_in, dtype, device, gen)
    if p.get("residual", False):
        inputs["residual"] = randn(_out_shape(inputs), dtype, device, gen)
    return inputs


def _out_shape(i):
    x, w = i["x"], i["weight"]
    K = w.shape[2]
    if "output_padding" in i:
        C_out = w.shape[1] * i.get("groups", x.shape[1] if w.shape[1] == 1 else 1)
        return (x.shape[0], C_out, conv1d_transpose_out_len(x.shape[2], K, i["stride"], i["padding"],
                                                            i["output_padding"], i["dilation"]))
    return (x.shape[0], w.shape[0], conv1d_out_len(x.shape[2], K, i["stride"], i["padding"], i["dilation"]))


def _alloc(i):
    return i["x"].new_empty(_out_shape(i))


def _conv_flops(p):
    G, B = p.get("groups", 1), p.get("B", 1)
    if p.get("transposed", False):
        return 2 * B * p["C_in"] * p["L"] * (p["C_out"] // G) * p["K"]
    L_out = conv1d_out_len(p["L"], p["K"], p.get("stride", 1), p.get("padding", 0), p.get("dilation", 1))
    return 2 * B * p["C_out"] * L_out * (p["C_in"] // G) * p["K"]


def _conv_bytes(p, itemsize):
    """x, weight and y once (and the residual when fused)."""
    G, B, K = p.get("groups", 1), p.get("B", 1), p["K"]
    if p.get("transposed", False):
        L_out = conv1d_transpose_out_len(p["L"], K, p.get("stride", 1), p.get("padding", 0),
                                         p.get("output_padding", 0), p.get("dilation", 1))
    else:
        L_out = conv1d_out_len(p["L"], K, p.get("stride", 1), p.get("padding", 0), p.get("dilation", 1))
    outputs = B * p["C_out"] * L_out * (2 if p.get("residual", False) else 1)
    return itemsize * (B * p["C_in"] * p["L"] + p["C_out"] * (p["C_in"] // G) * K + outputs)


def _bench(label, **p):
    return BenchShape(label, p, flops=_conv_flops, bytes=_conv_bytes)


def _same(K, d=1):
    return d * (K - 1) // 2


def _conv_case(devices=("cpu", "cuda"), dtypes=None, **p):
    return Case(p, devices, dtypes)


_GPU = ("cuda",)

_FP32 = ("float32",)

# Interpreter cases stay at C <= 32, L <= 64; GPU cases use the real layers at lengths the float64
# oracle checks in seconds (odd lengths, channel counts off the tile grid).
CONV1D_CASES = [
    _conv_case(B=2, C_in=24, C_out=20, L=61, K=3, padding=1),
    _conv_case(C_in=16, C_out=32, L=50, K=7, dilation=3, padding=9, bias=False, precision="tf32", dtypes=_FP32),
    _conv_case(C_in=32, C_out=32, L=64, K=5, dilation=2, padding=4),
    _conv_case(C_in=22, C_out=32, L=61, K=12, stride=6, padding=3),        # strided (noise conv form)
    _conv_case(C_in=24, C_out=32, L=45, K=5, dilation=2, padding=4, precision="tf32x3", dtypes=_FP32),
    _conv_case(B=2, C_in=24, C_out=24, L=37, K=3, padding=1, groups=24),     # depthwise (direct)
    _conv_case(B=2, C_in=32, C_out=32, L=40, K=3, padding=2, groups=2),
    _conv_case(C_in=16, C_out=1, L=45, K=7, padding=3),                      # tiny output (direct)
    # Kokoro generator resblocks, conv_post, noise convs; decoder; text encoder
    _conv_case(_GPU, C_in=256, C_out=256, L=1001, K=3, padding=1),
    _conv_case(_GPU, C_in=256, C_out=256, L=2003, K=7, dilation=3, padding=_same(7, 3)),
    _conv_case(_GPU, C_in=256, C_out=256, L=1001, K=11, dilation=5, padding=_same(11, 5)),
    _conv_case(_GPU, C_in=256, C_out=256, L=1001, K=11, dilation=5, padding=_same(11, 5), precision="tf32",
               dtypes=_FP32),
    _conv_case(_GPU, C_in=128, C_out=128, L=3001, K=11, dilation=5, padding=_same(11, 5)),
    _conv_case(_GPU, C_in=128, C_out=22, L=3001, K=7, padding=3),
    _conv_case(_GPU, C_in=22, C_out=256, L=6001, K=12, stride=6, padding=3),
    _conv_case(_GPU, C_in=22, C_out=128, L=3001, K=1),
    _conv_case(_GPU, C_in=1090, C_out=1024, L=401, K=3, padding=1),
    _conv_case(_GPU, C_in=514, C_out=1024, L=400, K=3, padding=1, precision="tf32", dtypes=_FP32),
    _conv_case(_GPU, C_in=768, C_out=768, L=1001, K=7, dilation=3, padding=9, precision="tf32x3", dtypes=_FP32),
    _conv_case(_GPU, C_in=100, C_out=1536, L=251, K=7, padding=3, precision="tf32x3", dtypes=_FP32),
    _conv_case(_GPU, C_in=1536, C_out=1536, L=300, K=7, padding=3, precision="tf32x3", dtypes=_FP32),
    _conv_case(_GPU, C_in=256, C_out=1, L=801, K=1),
    _conv_case(_GPU, B=3, C_in=512, C_out=512, L=123, K=5, padding=2),
    _conv_case(_GPU, C_in=512, C_out=512, L=801, K=3, padding=1, groups=512),
    # BigVGAN v2 24 kHz: conv_pre, AMP resblock convs, conv_post
    _conv_case(_GPU, C_in=100, C_out=1536, L=250, K=7, padding=3),
    _conv_case(_GPU, C_in=768, C_out=768, L=501, K=3, dilation=5, padding=5),
    _conv_case(_GPU, C_in=48, C_out=48, L=5001, K=11, dilation=5, padding=_same(11, 5)),
    _conv_case(_GPU, C_in=24, C_out=24, L=4001, K=7, dilation=3, padding=_same(7, 3)),
    _conv_case(_GPU, C_in=24, C_out=1, L=4001, K=7, padding=3, bias=False),
    # the causal decoder: latent conv, residual units (k7 d1/3/9 and k1), output conv
    _conv_case(_GPU, C_in=1024, C_out=1536, L=124, K=7, padding=3),
    _conv_case(_GPU, C_in=768, C_out=768, L=992, K=7, dilation=9, padding=_same(7, 9)),
    _conv_case(_GPU, C_in=384, C_out=384, L=1985, K=1),
    _conv_case(_GPU, C_in=96, C_out=1, L=5951, K=7, padding=3),
]

CONV1D_TRANSPOSE_CASES = [
    _conv_case(C_in=32, C_out=16, L=29, K=4, stride=2, padding=1),
    _conv_case(C_in=24, C_out=20, L=7, K=20, stride=10, padding=5),
    _conv_case(C_in=16, C_out=32, L=11, K=12, stride=6, padding=3, precision="tf32", dtypes=_FP32),
    _conv_case(C_in=16, C_out=16, L=13, K=5, stride=3, padding=2, output_padding=1, dilation=2),
    _conv_case(C_in=16, C_out=16, L=12, K=3, stride=2, output_padding=1, dilation=2),  # odd phases: no taps
    _conv_case(B=2, C_in=8, C_out=4, L=20, K=8, stride=4, padding=2),                  # tiny channels (direct)
    _conv_case(C_in=32, C_out=32, L=15, K=4, stride=2, padding=1, groups=2, bias=False),
    _conv_case(C_in=16, C_out=16, L=9, K=16, stride=8),                                 # causal form
    _conv_case(C_in=24, C_out=16, L=10, K=10, stride=5, precision="tf32x3", dtypes=_FP32),
    # Kokoro generator upsamplers
    _conv_case(_GPU, C_in=512, C_out=256, L=401, K=20, stride=10, padding=5),
    _conv_case(_GPU, C_in=256, C_out=128, L=1001, K=12, stride=6, padding=3),
    _conv_case(_GPU, C_in=256, C_out=128, L=1001, K=12, stride=6, padding=3, precision="tf32", dtypes=_FP32),
    _conv_case(_GPU, C_in=1536, C_out=768, L=250, K=8, stride=4, padding=2, precision="tf32x3", dtypes=_FP32),
    _conv_case(_GPU, C_in=512, C_out=256, L=401, K=20, stride=10, padding=5, precision="tf32x3", dtypes=_FP32),
    # BigVGAN v2 24 kHz upsamplers
    _conv_case(_GPU, C_in=1536, C_out=768, L=250, K=8, stride=4, padding=2),
    _conv_case(_GPU, C_in=768, C_out=384, L=1001, K=8, stride=4, padding=2),
    _conv_case(_GPU, C_in=96, C_out=48, L=4001, K=4, stride=2, padding=1),
    _conv_case(_GPU, C_in=48, C_out=24, L=5001, K=4, stride=2, padding=1),
    # the causal decoder's upsamplers (padding 0; the caller trims k − s samples)
    _conv_case(_GPU, C_in=1536, C_out=768, L=124, K=16, stride=8),
    _conv_case(_GPU, C_in=768, C_out=384, L=992, K=10, stride=5),
    _conv_case(_GPU, C_in=384, C_out=192, L=1001, K=8, stride=4),
    _conv_case(_GPU, B=2, C_in=192, C_out=96, L=1985, K=6, stride=3),
]


for _c in CONV1D_TRANSPOSE_CASES:
    _c.params["transposed"] = True


DEPTHWISE_TRANSPOSE_CASES = [
    _conv_case(C_in=24, C_out=24, L=33, K=3, stride=2, padding=1, output_padding=1),
    _conv_case(B=2, C_in=16, C_out=16, L=20, K=4, stride=2, padding=1, bias=False),
    _conv_case(C_in=8, C_out=8, L=17, K=5, stride=3, padding=2, output_padding=2),
    _conv_case(_GPU, C_in=1090, C_out=1090, L=401, K=3, stride=2, padding=1, output_padding=1),
    _conv_case(_GPU, B=2, C_in=512, C_out=512, L=400, K=3, stride=2, padding=1, output_padding=1),
]


for _c in DEPTHWISE_TRANSPOSE_CASES:
    _c.params.update(transposed=True, groups=_c.params["C_in"])


_SNAKE_RES = {"act": "snake", "residual": True}

FUSED_CASES = [
    _conv_case(C_in=32, C_out=32, L=53, K=7, dilation=3, padding=9, **_SNAKE_RES),
    _conv_case(C_in=16, C_out=24, L=40, K=3, padding=1, beta=True, scale=0.5 ** 0.5, **_SNAKE_RES),
    _conv_case(C_in=32, C_out=22, L=47, K=7, padding=3, act="leaky_relu", slope=0.01),
    _conv_case(C_in=32, C_out=16, L=9, K=20, stride=10, padding=5, act="leaky_relu", slope=0.1, transposed=True),
    _conv_case(C_in=16, C_out=16, L=7, K=16, stride=8, transposed=True, beta=True, **_SNAKE_RES),
    _conv_case(C_in=16, C_out=1, L=45, K=7, padding=3, **_SNAKE_RES),                  # direct path
    # Kokoro generator AdaIN resblocks (snake, then conv, then + x), upsampler and conv_post after leaky_relu
    _conv_case(_GPU, C_in=256, C_out=256, L=2001, K=11, dilation=5, padding=_same(11, 5), **_SNAKE_RES),
    _conv_case(_GPU, C_in=128, C_out=128, L=3001, K=3, padding=1, **_SNAKE_RES),
    _conv_case(_GPU, C_in=512, C_out=256, L=401, K=20, stride=10, padding=5, act="leaky_relu", slope=0.1,
               transposed=True),
    _conv_case(_GPU, C_in=128, C_out=22, L=3001, K=7, padding=3, act="leaky_relu", slope=0.01),
    # the causal decoder's residual units (snakebeta-style separate beta), its snake + upsampler
    _conv_case(_GPU, C_in=768, C_out=768, L=992, K=7, dilation=9, padding=_same(7, 9), beta=True, **_SNAKE_RES),
    _conv_case(_GPU, C_in=768, C_out=768, L=992, K=1, beta=True, **_SNAKE_RES),
    _conv_case(_GPU, C_in=768, C_out=384, L=992, K=10, stride=5, act="snake", beta=True, transposed=True),
    _conv_case(_GPU, C_in=256, C_out=256, L=2001, K=11, dilation=5, padding=_same(11, 5), precision="tf32x3",
               dtypes=_FP32, **_SNAKE_RES),
    # StyleTTS2 decoder block output: (conv(x) + shortcut) / √2
    _conv_case(_GPU, C_in=1024, C_out=1024, L=801, K=3, padding=1, residual=True, scale=0.5 ** 0.5),
]

CONV1D_BENCH = [
    _bench("Kokoro gen resblock 256ch k11 d5 [1, 256, 8000]", C_in=256, C_out=256, L=8000, K=11, dilation=5,
           padding=25),
    _bench("Kokoro gen resblock 128ch k7 d3 [1, 128, 48000]", C_in=128, C_out=128, L=48000, K=7, dilation=3,
           padding=9),
    _bench("Kokoro conv_post 128->22 k7 [1, 128, 48000]", C_in=128, C_out=22, L=48000, K=7, padding=3),
    _bench("Kokoro noise conv 22->256 k12 s6 [1, 22, 48001]", C_in=22, C_out=256, L=48001, K=12, stride=6,
           padding=3),
    _bench("Kokoro decoder 1090->1024 k3 [1, 1090, 800]", C_in=1090, C_out=1024, L=800, K=3, padding=1),
    _bench("BigVGAN v2 conv_pre 100->1536 k7 [1, 100, 938]", C_in=100, C_out=1536, L=938, K=7, padding=3),
    _bench("BigVGAN v2 resblock 768ch k7 d3 [1, 768, 3752]", C_in=768, C_out=768, L=3752, K=7, dilation=3,
           padding=9),
    _bench("BigVGAN v2 resblock 96ch k11 d5 [1, 96, 60032]", C_in=96, C_out=96, L=60032, K=11, dilation=5,
           padding=25),
    _bench("decoder conv_in 1024->1536 k7 [1, 1024, 500]", C_in=1024, C_out=1536, L=500, K=7, padding=3),
    _bench("decoder residual 384ch k7 d9 [1, 384, 19840]", C_in=384, C_out=384, L=19840, K=7, dilation=9,
           padding=27),
    _bench("large 1536ch k7 [1, 1536, 16384]", C_in=1536, C_out=1536, L=16384, K=7, padding=3),
]


def _float32_tensor_core_bench(shapes, picks):
    """tf32 and tf32x3 rows (float32 storage) for some of the shapes, the precision in the label."""
    return [BenchShape(f"{b.label} {prec}", {**b.params, "precision": prec}, b.flops, b.bytes, dtypes=_FP32)
            for i in picks for b in (shapes[i],) for prec in ("tf32", "tf32x3")]


CONV1D_BENCH += _float32_tensor_core_bench(CONV1D_BENCH, (0, 6, 10))

CONV1D_TRANSPOSE_BENCH = [
    _bench("Kokoro gen up x10 512->256 k20 [1, 512, 800]", C_in=512, C_out=256, L=800, K=20, stride=10, padding=5),
    _bench("Kokoro gen up x6 256->128 k12 [1, 256, 8000]", C_in=256, C_out=128, L=8000, K=12, stride=6, padding=3),
    _bench("BigVGAN v2 up x4 1536->768 k8 [1, 1536, 938]", C_in=1536, C_out=768, L=938, K=8, stride=4, padding=2),
    _bench("BigVGAN v2 up x2 384->192 k4 [1, 384, 15008]", C_in=384, C_out=192, L=15008, K=4, stride=2,
           padding=1),
    _bench("BigVGAN v2 up x2 48->24 k4 [1, 48, 120064]", C_in=48, C_out=24, L=120064, K=4, stride=2, padding=1),
    _bench("decoder up x8 1536->768 k16 [1, 1536, 500]", C_in=1536, C_out=768, L=500, K=16, stride=8),
    _bench("decoder up x3 192->96 k6 [1, 192, 80000]", C_in=192, C_out=96, L=80000, K=6, stride=3),
    _bench("large up x8 1024->512 k16 [1, 1024, 8192]", C_in=1024, C_out=512, L=8192, K=16, stride=8),
]


for _b in CONV1D_TRANSPOSE_BENCH:
    _b.params["transposed"] = True


CONV1D_TRANSPOSE_BENCH += _float32_tensor_core_bench(CONV1D_TRANSPOSE_BENCH, (2, 7))

DEPTHWISE_TRANSPOSE_BENCH = [
    _bench("Kokoro decoder pool x2 [1, 1090, 400]", C_in=1090, C_out=1090, L=400, K=3, stride=2, padding=1,
           output_padding=1, groups=1090),
    _bench("Kokoro F0 pool x2 [1, 512, 400]", C_in=512, C_out=512, L=400, K=3, stride=2, padding=1,
           output_padding=1, groups=512),
    _bench("large pool x2 [1, 1024, 131072]", C_in=1024, C_out=1024, L=1 << 17, K=3, stride=2, padding=1,
           output_padding=1, groups=1024),
]


for _b in DEPTHWISE_TRANSPOSE_BENCH:
    _b.params["transposed"] = True


FUSED_BENCH = [
    _bench("Kokoro gen resblock snake+conv k11 d5+res [1, 256, 8000]", C_in=256, C_out=256, L=8000, K=11,
           dilation=5, padding=25, **_SNAKE_RES),
    _bench("Kokoro gen resblock snake+conv k3+res [1, 128, 48000]", C_in=128, C_out=128, L=48000, K=3,
           padding=1, **_SNAKE_RES),
    _bench("Kokoro gen leaky_relu+up x10 [1, 512, 800]", C_in=512, C_out=256, L=800, K=20, stride=10, padding=5,
           act="leaky_relu", slope=0.1, transposed=True),
    _bench("decoder residual unit snake+conv k1+res [1, 384, 19840]", C_in=384, C_out=384, L=19840, K=1,
           beta=True, **_SNAKE_RES),
    _bench("large snake+conv k7+res [1, 1024, 32768]", C_in=1024, C_out=1024, L=32768, K=7, padding=3,
           **_SNAKE_RES),
]


def _gemm_signature(dt: str) -> dict[str, str]:
    ptr = f"*{dt}"
    sig = {n: ptr for n in ("x_ptr", "w_ptr", "bias_ptr", "res_ptr", "y_ptr")}
    sig["phase_base_ptr"] = "*i32"
    sig.update(a_ptr=ptr, b_ptr=ptr)
    sig.update({n: "i32" for n in ("C_in", "L_in", "C_out", "L_out", "G", "C_in_g", "C_out_g", "R", "U",
                                   "n_phases", "in_step", "tap_step", "base", "out_step")})
    sig.update(slope="fp32", scale="fp32")
    return sig


def _direct_signature(dt: str) -> dict[str, str]:
    ptr = f"*{dt}"
    sig = {n: ptr for n in ("x_ptr", "w_ptr", "bias_ptr", "res_ptr", "y_ptr", "a_ptr", "b_ptr")}
    sig.update({n: "i32" for n in ("C_in", "L_in", "C_out", "L_out", "C_in_g", "C_out_g", "K", "stride",
                                   "padding", "dilation")})
    sig.update(slope="fp32", scale="fp32")
    return sig


def _tap_signature(dt: str, cfg: GemmConfig) -> dict[str, str]:
    # host descriptors as Triton spells a TensorDescriptor argument (element type and box shape), or the
    # pointers the kernel makes its descriptors from
    ptr = f"*{dt}"
    if DEVICE_DESCRIPTORS:
        sig = {"x_desc": ptr, "w_desc": ptr}
    else:
        sig = {"x_desc": f"tensordesc<{dt}[{cfg.BLOCK_N}, {cfg.BLOCK_K}]>",
               "w_desc": f"tensordesc<{dt}[{cfg.BLOCK_M}, {cfg.BLOCK_K}]>"}
    sig.update({n: ptr for n in ("x_ptr", "w_ptr", "bias_ptr", "res_ptr", "y_ptr")})
    sig["phase_base_ptr"] = "*i32"
    sig.update(a_ptr=ptr, b_ptr=ptr)
    sig.update({n: "i32" for n in ("C_in", "L_in", "C_out", "L_out", "G", "C_in_g", "C_out_g", "C_in_pad", "U",
                                   "n_phases", "tap_step", "base", "out_step", "x_shift", "tiles_n", "n_tiles",
                                   "x_rows", "x_pitch")})
    sig.update(slope="fp32", scale="fp32")
    return sig


# (storage dtype, tl.dot precision) per tile class
_CLASS_FORMS = {"16bit": (("fp16", "ieee"), ("bf16", "ieee")), "tf32": (("fp32", "tf32"), ("fp32", "tf32x3")),
                "ieee": (("fp32", "ieee"),)}


_TAP_CLASS_FORMS = {"16bit": _CLASS_FORMS["16bit"], "tf32": (("fp32", "tf32"),), "tf32x3": (("fp32", "tf32x3"),)}

_FUSIONS = (("snake", True, False), ("leaky_relu", False, True))  # (act, residual, transposed)


def _form(dt, prec, cfg, transposed, act, res):
    label = "16bit" if dt != "fp32" else prec
    return (f"[{dt},{label},{cfg.BLOCK_M}x{cfg.BLOCK_N}x{cfg.BLOCK_K},{'transposed' if transposed else 'conv'},"
            f"{act}{',res' if res else ''}]")


def _gemm_variant(dt, prec, cfg, transposed, act="none", res=False):
    return AotVariant(
        "_conv_gemm_kernel" + _form(dt, prec, cfg, transposed, act, res), _conv_gemm_kernel, _gemm_signature(dt),
        dict(TRANSPOSED=transposed, ACT=act, HAS_BIAS=True, HAS_RES=res, PRECISION=prec, UPCAST=False,
             PREFETCH=dt != "fp32", FAST_SIN=True, BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N, BLOCK_K=cfg.BLOCK_K),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages, expect_mma=dt != "fp32" or prec != "ieee")


def _interleaved_form(stride: int) -> tuple[int, bool]:
    """(PHASE_PAD, DENSE) of the phase-interleaved kernel for a stride: what its compiled code depends on."""
    phase_pad = triton.next_power_of_2(stride)
    return phase_pad, phase_pad == stride


def _tap_variant(dt, prec, cfg, transposed, act="none", res=False, persistent=False, stride=1):
    # stride > 1 (transposed=False): the phase-interleaved transposed conv, a stride-1 conv whose epilogue
    # interleaves PHASE_PAD phases; ROW_ALIGN at one 16-byte vector (L_out a multiple of 8 or 4 elements: the
    # model shapes); a smaller one differs only in the stores' vector width
    name = "_conv_tap_kernel" + _form(dt, prec, cfg, transposed, act, res)
    phase_pad, dense = _interleaved_form(stride)
    if persistent:
        name = name[:-1] + ",persistent]"
    if stride > 1:
        name = name[:-1] + f",interleaved {phase_pad}{'' if dense else ' padded'}]"
    return AotVariant(
        name, _conv_tap_kernel, _tap_signature(dt, cfg),
        dict(TRANSPOSED=transposed, ACT=act, HAS_BIAS=True, HAS_RES=res, PRECISION=prec, UPCAST=False,
             USE_TMA=True, DEVICE_DESC=DEVICE_DESCRIPTORS, PERSISTENT=persistent, FAST_SIN=True,
             PHASE_PAD=phase_pad, DENSE=dense, ROW_ALIGN=16 // _ITEMSIZE[dt],
             PHASE_MAJOR=transposed and not res and ("16bit" if dt != "fp32" else prec) in PHASE_MAJOR_CLASSES,
             BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N, BLOCK_K=cfg.BLOCK_K),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages, expect_mma=True)


_ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _time_major_pad_variant(dt):
    sig = {"x_ptr": f"*{dt}", "xt_ptr": f"*{dt}", **{n: "i32" for n in ("C", "L", "Lp", "pitch", "left")}}
    return AotVariant(f"_time_major_pad_kernel[{dt}]", _time_major_pad_kernel, sig,
                      dict(BLOCK_C=TIME_MAJOR_PAD_BLOCK[0], BLOCK_T=TIME_MAJOR_PAD_BLOCK[1]), num_warps=4)


def _interleave_phases_variant(dt, stride):
    sig = {"src_ptr": f"*{dt}", "y_ptr": f"*{dt}", "P": "i32", "L_out": "i32"}
    return AotVariant(f"_interleave_phases_kernel[{dt},S={stride}]", _interleave_phases_kernel, sig,
                      dict(S=stride, S_P=triton.next_power_of_2(stride), BLOCK_J=interleave_block(stride)),
                      num_warps=4)


def _direct_variant(dt, block, transposed, act="none", res=False):
    return AotVariant(
        f"_conv_direct_kernel[{dt},{block[0]}x{block[1]},{'transposed' if transposed else 'conv'},{act}"
        f"{',res' if res else ''}]",
        _conv_direct_kernel, _direct_signature(dt),
        dict(TRANSPOSED=transposed, ACT=act, HAS_BIAS=True, HAS_RES=res, FAST_SIN=True, BLOCK_C=block[0],
             BLOCK_T=block[1]),
        num_warps=4)


def conv_variants(transposed_forms=(False, True), fused=False) -> list[AotVariant]:
    """Every tile the launcher can pick on sm_90, per storage dtype and precision, for the given conv forms:
    the tap kernel (TMA) for the tensor-core classes, the gather kernel for exact float32 and for strided
    convs; `fused` adds the activation/residual forms at every tile a fused input activation can run on."""
    out = []
    fusions = [f for f in _FUSIONS if f[2] in transposed_forms] if fused else []
    for cls, configs in GEMM_CONFIGS.items():
        forms = transposed_forms if cls == "ieee" else tuple(t for t in transposed_forms if not t)
        for dt, prec in _CLASS_FORMS[cls]:
            for transposed in forms:  # exact float32: strided convs on the narrow tiles too, transposed ones only
                narrow = IEEE_NARROW_CONFIGS if cls == "ieee" else ()
                out += [_gemm_variant(dt, prec, cfg, transposed) for cfg in (narrow or configs if transposed
                                                                             else configs + narrow)]
            dtype = torch.float32 if dt == "fp32" else torch.float16
            tiles = sorted({fused_input_config(c, dtype, prec) for c in configs}, key=lambda c: -c.BLOCK_M)
            out += [_gemm_variant(dt, prec, c, tr, act, res) for c in tiles for act, res, tr in fusions if tr in forms]
    for cls, configs in TAP_CONFIGS.items():
        for dt, prec in _TAP_CLASS_FORMS[cls]:
            for transposed in transposed_forms:
                if transposed and cls in PHASE_MAJOR_CLASSES:  # phase-major: narrow tiles, never persistent
                    out += [_tap_variant(dt, prec, cfg, True) for cfg in configs if cfg.BLOCK_N <= TAP_FUSED_MAX_N]
                    continue
                out += [_tap_variant(dt, prec, cfg, transposed) for cfg in configs]
                if TAP_PERSISTENT[cls]:
                    out += [_tap_variant(dt, prec, cfg, transposed, persistent=True) for cfg in configs]
            out += [_tap_variant(dt, prec, c, tr, act, res) for c in configs if c.BLOCK_N <= TAP_FUSED_MAX_N
                    for act, res, tr in fusions]
            if True not in transposed_forms:
                continue
            # one representative stride per compiled form (PHASE_PAD, DENSE); no residual (per-phase then)
            strides = {_interleaved_form(s): s for s in sorted(INTERLEAVED_STRIDES[cls])}.values()
            for s in strides:
                tiles = INTERLEAVED_CONFIGS[cls]
                out += [_tap_variant(dt, prec, c, False, stride=s) for c in tiles]
                if TAP_PERSISTENT[cls]:
                    out += [_tap_variant(dt, prec, c, False, persistent=True, stride=s) for c in tiles
                            if c.BLOCK_N <= TAP_FUSED_MAX_N]
                out += [_tap_variant(dt, prec, c, False, act, stride=s) for c in tiles
                        if c.BLOCK_N <= TAP_FUSED_MAX_N for act, res, tr in fusions if tr and not res]
    out += [_time_major_pad_variant(dt) for dt in ("fp32", "fp16", "bf16")]
    if True in transposed_forms:  # the strides of the models' transposed convs
        out += [_interleave_phases_variant(dt, s) for dt in ("fp32", "fp16", "bf16") for s in (2, 3, 4, 5, 6, 8, 10)]
    for dt in ("fp32", "fp16", "bf16"):
        for transposed in transposed_forms:
            out += [_direct_variant(dt, block, transposed) for block in DIRECT_CONFIGS]
        if fused and False in transposed_forms:
            out.append(_direct_variant(dt, DIRECT_CONFIGS[0], False, "snake", True))
    return out


register(Kernel(
    name="conv1d", family="conv", used_by=("kokoro", "bigvgan", "causal_decoder"),
    doc="y[b,o,t] = bias[o] + sum_{c in group(o), k} W[o,c,k] x[b,c,t*s + k*d - p]; implicit GEMM (tl.dot)",
    make_inputs=lambda p, dt, dev, g: _with_groups_precision(p, _conv_inputs(p, dt, dev, g)),
    alloc_out=_alloc, launch=conv1d, oracle=conv1d_oracle,
    peer=F.conv1d,
    cases=CONV1D_CASES, bench=CONV1D_BENCH, tol_kind="reduction",
    variants=lambda: conv_variants((False,)),
))


register(Kernel(
    name="conv1d_transpose", family="conv", used_by=("kokoro", "bigvgan", "causal_decoder"),
    doc="y[b,o,t] = bias[o] + sum_{c,k,i: i*s + k*d - p = t} W[c,o,k] x[b,c,i]; gather form by output phase",
    make_inputs=lambda p, dt, dev, g: _with_groups_precision(p, _conv_inputs(p, dt, dev, g)),
    alloc_out=_alloc, launch=conv1d_transpose, oracle=conv1d_transpose_oracle,
    peer=F.conv_transpose1d,
    cases=CONV1D_TRANSPOSE_CASES, bench=CONV1D_TRANSPOSE_BENCH, tol_kind="reduction",
    variants=lambda: conv_variants((True,)),
))


register(Kernel(
    name="conv1d_transpose_depthwise", family="conv", used_by=("kokoro",),
    doc="transposed conv with groups == channels, weight [C, 1, K]; matches PyTorch's output_padding edge",
    make_inputs=_conv_inputs, alloc_out=_alloc, launch=conv1d_transpose_depthwise,
    oracle=lambda x, weight, **kw: conv1d_transpose_oracle(x, weight, groups=x.shape[1], **kw),
    peer=lambda x, weight, **kw: F.conv_transpose1d(x, weight, groups=x.shape[1], **kw),
    cases=DEPTHWISE_TRANSPOSE_CASES, bench=DEPTHWISE_TRANSPOSE_BENCH, tol_kind="reduction",
    variants=lambda: [_direct_variant(dt, block, True) for dt in ("fp32", "fp16", "bf16")
                      for block in DIRECT_CONFIGS],
))


register(Kernel(
    name="conv1d_fused", family="conv", used_by=(),
    doc="y = scale * (conv(act(x)) + bias + residual), conv or transposed; act leaky_relu(slope) or "
        "snake(alpha_c, beta_c) applied as the input is loaded",
    make_inputs=_fused_inputs, alloc_out=_alloc, launch=conv1d_fused, oracle=conv1d_fused_oracle,
    peer=conv1d_fused_torch,
    cases=FUSED_CASES, bench=FUSED_BENCH, tol_kind="reduction",
    variants=lambda: [v for v in conv_variants(fused=True) if ",none" not in v.name],
))
