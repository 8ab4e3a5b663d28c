"""Element-wise activations.

snake1d     y = x + sin(a_c·x)² / (a_c + 1e-9)                 x [B, C, L] or [C, L], a [C]
snakebeta   y = x + sin(a_c·x)² / (b_c + 1e-9)                 a = exp(α), b = exp(β) when log_scale
leaky_relu  y = x > 0 ? x : slope·x                             slope a runtime scalar
gelu_erf    y = 0.5·x·(1 + erf(x/√2))                           exact form
gelu_tanh   y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))      BERT/ALBERT "gelu_new" (Kokoro's ALBERT)
clamp_scalar y = min(max(x, lo), hi)                            lo, hi runtime scalars
upsample_nearest1d  out[..., c, t] = x[..., c, t // factor]

All are memory-bound: one read and one write per element, float32 arithmetic whatever the storage
dtype. Launch invariant: inputs contiguous; outputs allocated by the caller or here with x's dtype.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import block_size, check_channel_params, randn, sin, tanh
from tilewave.reference.activation import snake_torch

# 4 KiB per program at 4 warps (8 fp32 or 16 fp16/bf16 elements per thread, 16-byte vector accesses): the
# fastest of the configurations that tune_elementwise.py swept (benchmarks/RESULTS.md).
BLOCK_BYTES = 4096
NUM_WARPS = 4
_ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _block_for(x: torch.Tensor, n: int) -> int:
    return block_size(n, BLOCK_BYTES // x.element_size())


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _snake_kernel(x_ptr, a_ptr, b_ptr, y_ptr, C, L,
                  HAS_BETA: tl.constexpr, LOG_SCALE: tl.constexpr, FAST_SIN: tl.constexpr, BLOCK: tl.constexpr):
    # grid: (B*C rows, cdiv(L, BLOCK)); one per-channel parameter load per program.
    row = tl.program_id(0)
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = col < L
    c = row % C
    a = tl.load(a_ptr + c).to(tl.float32)
    if HAS_BETA:
        b = tl.load(b_ptr + c).to(tl.float32)
    else:
        b = a
    if LOG_SCALE:
        a = tl.exp(a)
        b = tl.exp(b)
    offs = row.to(tl.int64) * L + col
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    s = sin(a * x, FAST_SIN)
    y = x + s * s / (b + 1e-9)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _leaky_relu_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.where(x > 0, x, x * slope)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def erf(z):
    # Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7, one reciprocal, one exp and five FMAs. libdevice's erff
    # (what tl.erf calls) leaves 16-bit GELU compute-bound and slower than PyTorch; this form is closer to copy
    # bandwidth and faster than PyTorch (tune_gelu.py: benchmarks/RESULTS.md), and is still the erf form.
    a = tl.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    e = 1.0 - p * tl.exp(-a * a)
    return tl.where(z < 0, -e, e)


@triton.jit
def _gelu_erf_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _clamp_kernel(x_ptr, y_ptr, n, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.minimum(tl.maximum(x, lo), hi)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _upsample_nearest_kernel(x_ptr, y_ptr, L_in, L_out, factor, BLOCK: tl.constexpr):
    # grid: (rows, cdiv(L_out, BLOCK)); each output reads its source sample (reads are cached in L1/L2).
    row = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = t < L_out
    v = tl.load(x_ptr + row * L_in + t // factor, mask=mask)
    tl.store(y_ptr + row * L_out + t, v, mask=mask)


# ---------------------------------------------------------------------------------------------------
# launchers (Triton path; tilewave.ops decides when to call them)
# ---------------------------------------------------------------------------------------------------
def _check(x: torch.Tensor, name: str) -> None:
    if not x.is_contiguous():
        raise ValueError(f"{name}: input must be contiguous, got strides {x.stride()} for shape {tuple(x.shape)}")


def snake(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False,
          out: torch.Tensor | None = None) -> torch.Tensor:
    _check(x, "snake")
    C, L = x.shape[-2], x.shape[-1]
    check_channel_params("snake", C, alpha, beta)
    out = torch.empty_like(x) if out is None else out
    rows = x.numel() // max(L, 1)
    if rows and L:
        BLOCK = _block_for(x, L)
        _snake_kernel[(rows, triton.cdiv(L, BLOCK))](
            x, alpha.contiguous(), (alpha if beta is None else beta).contiguous(), out, C, L,
            HAS_BETA=beta is not None, LOG_SCALE=log_scale, FAST_SIN=x.is_cuda, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out


def snake1d(x, alpha, out=None):
    return snake(x, alpha, None, False, out)


def snakebeta(x, alpha, beta, log_scale=False, out=None):
    return snake(x, alpha, beta, log_scale, out)


def _flat_launch(kernel, x, out, *scalars):
    _check(x, kernel.__name__)
    out = torch.empty_like(x) if out is None else out
    n = x.numel()
    if n:
        BLOCK = _block_for(x, n)
        kernel[(triton.cdiv(n, BLOCK),)](x, out, n, *scalars, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out


def leaky_relu(x, slope: float, out=None):
    return _flat_launch(_leaky_relu_kernel, x, out, float(slope))


def gelu_erf(x, out=None):
    return _flat_launch(_gelu_erf_kernel, x, out)


def gelu_tanh(x, out=None):
    return _flat_launch(_gelu_tanh_kernel, x, out)


def clamp_scalar(x, lo: float, hi: float, out=None):
    if not lo <= hi:
        raise ValueError(f"clamp_scalar: lo ({lo}) must be <= hi ({hi})")
    return _flat_launch(_clamp_kernel, x, out, float(lo), float(hi))


def upsample_nearest1d(x, factor: int, out=None):
    _check(x, "upsample_nearest1d")
    if factor < 1:
        raise ValueError(f"upsample_nearest1d: factor must be >= 1, got {factor}")
    L = x.shape[-1]
    out = x.new_empty(*x.shape[:-1], L * factor) if out is None else out
    rows = x.numel() // max(L, 1)
    if rows and L:
        BLOCK = _block_for(x, L * factor)
        _upsample_nearest_kernel[(rows, triton.cdiv(L * factor, BLOCK))](x, out, L, L * factor, factor,
                                                                         BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out


# ---------------------------------------------------------------------------------------------------
# float64 oracles (snake's PyTorch peer, also the CPU path of tilewave.ops: tilewave/reference/activation.py)
# ---------------------------------------------------------------------------------------------------
def snake_oracle(x, alpha, beta=None, log_scale=False):
    import numpy as np

    x, a = x.numpy(), alpha.numpy()[:, None]
    b = a if beta is None else beta.numpy()[:, None]
    if log_scale:
        a, b = np.exp(a), np.exp(b)
    return torch.from_numpy(x + np.sin(a * x) ** 2 / (b + 1e-9))


def gelu_erf_oracle(x):
    return 0.5 * x * (1 + torch.special.erf(x / math.sqrt(2)))


def gelu_tanh_oracle(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


# ---------------------------------------------------------------------------------------------------
# registration: tests (small shapes on the interpreter, model shapes on the GPU) and benches
# ---------------------------------------------------------------------------------------------------
def _ew_bytes(n_tensors=2):
    return lambda p, itemsize: n_tensors * itemsize * math.prod(p["shape"])


def _shape_inputs(p, dtype, device, gen, scale=3.0):
    return {"x": randn(p["shape"], dtype, device, gen, scale=scale)}


# Kokoro generator resblocks at 10 s of speech, BigVGAN's last stage, and one >= 256 MB tensor.
_EW_BENCH = [
    ("Kokoro gen resblock 1 [1, 256, 8000]", (1, 256, 8000)),
    ("Kokoro gen resblock 2 [1, 128, 48000]", (1, 128, 48000)),
    ("BigVGAN v2 last stage x2 [1, 48, 480000]", (1, 48, 480000)),
    ("large [1, 128, 1048576]", (1, 128, 1 << 20)),
]
_EW_CASES = [
    Case({"shape": (2, 3, 77)}),
    Case({"shape": (5, 123)}),
    Case({"shape": (1, 64, 1031)}),
    Case({"shape": (3, 64, 4096)}, devices=("cuda",)),
    Case({"shape": (1, 512, 24001)}, devices=("cuda",)),
]


def _snake_inputs(p, dtype, device, gen, beta=False, log_scale=False):
    C = p["shape"][-2]
    inputs = _shape_inputs(p, dtype, device, gen)
    # alpha in (0.1, 2.1) as trained snake alphas are; log-scale parameters around 0 (alpha ~ 1).
    if log_scale:
        inputs["alpha"] = randn((C,), dtype, device, gen, scale=0.5)
        inputs["beta"] = randn((C,), dtype, device, gen, scale=0.5)
    else:
        inputs["alpha"] = randn((C,), torch.float32, "cpu", gen).abs_().add_(0.1).to(dtype).to(device)
        if beta:
            inputs["beta"] = randn((C,), torch.float32, "cpu", gen).abs_().add_(0.1).to(dtype).to(device)
    if beta:
        inputs["log_scale"] = log_scale
    return inputs


def _like_x(inputs):
    return torch.empty_like(inputs["x"])


def _bench(flops_per_elem, **extra):
    return [BenchShape(label, {"shape": shape, **extra},
                       flops=lambda p, f=flops_per_elem: f * math.prod(p["shape"]), bytes=_ew_bytes())
            for label, shape in _EW_BENCH]


def _ew_variants(fn, scalars: dict[str, str]):
    """One AOT variant per storage dtype (with that dtype's block): pointers take the dtype, scalars keep theirs."""
    return [AotVariant(f"{fn.__name__}[{dt}]", fn, {"x_ptr": f"*{dt}", "y_ptr": f"*{dt}", **scalars},
                       {"BLOCK": BLOCK_BYTES // size}, num_warps=NUM_WARPS)
            for dt, size in _ITEMSIZE.items()]


def _snake_variants():
    return [AotVariant(f"_snake_kernel[{dt},beta={hb},log={ls}]", _snake_kernel,
                       {"x_ptr": f"*{dt}", "a_ptr": f"*{dt}", "b_ptr": f"*{dt}", "y_ptr": f"*{dt}",
                        "C": "i32", "L": "i32"},
                       {"HAS_BETA": hb, "LOG_SCALE": ls, "FAST_SIN": True, "BLOCK": BLOCK_BYTES // size},
                       num_warps=NUM_WARPS)
            for dt, size in _ITEMSIZE.items() for hb, ls in ((False, False), (True, False), (True, True))]


_SLOPES = (0.2, 0.1, 0.01)  # all three occur in Kokoro alone

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="snake1d", family="activation", used_by=("kokoro",), doc="y = x + sin(a_c x)^2 / (a_c + 1e-9)",
    make_inputs=_snake_inputs, alloc_out=_like_x, launch=snake1d, oracle=snake_oracle, peer=snake_torch,
    cases=_EW_CASES, bench=_bench(6), variants=_snake_variants,
))

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="snakebeta", family="activation", used_by=("causal_decoder",),
    doc="y = x + sin(a_c x)^2 / (b_c + 1e-9); a = exp(alpha), b = exp(beta) when log_scale",
    make_inputs=lambda p, dt, dev, g: _snake_inputs(p, dt, dev, g, beta=True, log_scale=p["log_scale"]),
    alloc_out=_like_x, launch=snakebeta, oracle=snake_oracle, peer=snake_torch,
    cases=[Case({**c.params, "log_scale": ls}, c.devices) for c in _EW_CASES for ls in (False, True)],
    bench=_bench(8, log_scale=True), variants=_snake_variants,
))

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="leaky_relu", family="activation", used_by=("kokoro",), doc="y = x > 0 ? x : slope x (slope a runtime scalar)",
    make_inputs=lambda p, dt, dev, g: {**_shape_inputs(p, dt, dev, g), "slope": p["slope"]},
    alloc_out=_like_x, launch=leaky_relu, oracle=lambda x, slope: torch.where(x > 0, x, slope * x),
    peer=lambda x, slope: F.leaky_relu(x, slope),
    cases=[Case({**c.params, "slope": _SLOPES[i % 3]}, c.devices) for i, c in enumerate(_EW_CASES)],
    bench=_bench(2, slope=0.1),
    variants=lambda: _ew_variants(_leaky_relu_kernel, {"n": "i64", "slope": "fp32"}),
))

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="gelu_erf", family="activation", used_by=(), doc="y = 0.5 x (1 + erf(x / sqrt 2))",
    make_inputs=_shape_inputs, alloc_out=_like_x, launch=gelu_erf, oracle=gelu_erf_oracle,
    peer=lambda x: F.gelu(x, approximate="none"),
    cases=_EW_CASES, bench=_bench(10),
    variants=lambda: _ew_variants(_gelu_erf_kernel, {"n": "i64"}),
))

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="gelu_tanh", family="activation", used_by=("kokoro",),
    doc="y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
    make_inputs=_shape_inputs, alloc_out=_like_x, launch=gelu_tanh, oracle=gelu_tanh_oracle,
    peer=lambda x: F.gelu(x, approximate="tanh"),
    cases=_EW_CASES, bench=_bench(14),
    variants=lambda: _ew_variants(_gelu_tanh_kernel, {"n": "i64"}),
))

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="clamp_scalar", family="activation", used_by=("bigvgan",),
    doc="y = min(max(x, lo), hi) (lo, hi runtime scalars)",
    make_inputs=lambda p, dt, dev, g: {**_shape_inputs(p, dt, dev, g), "lo": p["lo"], "hi": p["hi"]},
    alloc_out=_like_x, launch=clamp_scalar, oracle=lambda x, lo, hi: x.clamp(lo, hi),
    peer=lambda x, lo, hi: torch.clamp(x, lo, hi),
    cases=[Case({**c.params, "lo": lo, "hi": hi}, c.devices)
           for c, (lo, hi) in zip(_EW_CASES, [(-1.0, 1.0), (-0.5, 2.0), (0.0, 0.0), (-1.0, 1.0), (-2.5, 0.3)])],
    bench=_bench(2, lo=-1.0, hi=1.0),
    variants=lambda: _ew_variants(_clamp_kernel, {"n": "i64", "lo": "fp32", "hi": "fp32"}),
))


def _upsample_bytes(p, itemsize):
    return itemsize * math.prod(p["shape"]) * (1 + p["factor"])


register(Kernel(
    name="upsample_nearest1d", family="resample", used_by=("kokoro",), doc="out[..., t] = x[..., t // factor]",
    make_inputs=lambda p, dt, dev, g: {**_shape_inputs(p, dt, dev, g), "factor": p["factor"]},
    alloc_out=lambda i: i["x"].new_empty(*i["x"].shape[:-1], i["x"].shape[-1] * i["factor"]),
    launch=upsample_nearest1d,
    oracle=lambda x, factor: x.repeat_interleave(factor, dim=-1),
    peer=lambda x, factor: F.interpolate(x if x.dim() == 3 else x[None], scale_factor=factor, mode="nearest"),
    cases=[Case({**c.params, "factor": f}, c.devices) for c, f in zip(_EW_CASES, (2, 3, 2, 2, 5))],
    # StyleTTS2 decoder shortcut: 512 channels at 80 Hz for 10 s, upsampled x2; plus a >= 256 MB output.
    bench=[BenchShape("Kokoro decoder shortcut [1, 1090, 800] x2", {"shape": (1, 1090, 800), "factor": 2},
                      flops=lambda p: 0, bytes=_upsample_bytes),
           BenchShape("large [1, 128, 524288] x2", {"shape": (1, 128, 1 << 19), "factor": 2},
                      flops=lambda p: 0, bytes=_upsample_bytes)],
    variants=lambda: [AotVariant(f"_upsample_nearest_kernel[{dt}]", _upsample_nearest_kernel,
                                 {"x_ptr": f"*{dt}", "y_ptr": f"*{dt}", "L_in": "i32", "L_out": "i32", "factor": "i32"},
                                 {"BLOCK": BLOCK_BYTES // size}, num_warps=NUM_WARPS) for dt, size in _ITEMSIZE.items()],
))
