"""Anti-aliased activation (BigVGAN's AMP blocks), fused: upsample x2 -> snake/snakebeta -> low-pass, stride 2.

act1d   y = Down(act(Up(x)))                     x, y [B, C, L] or [C, L]; alpha, beta [C]; filters f_u, f_d [K]

With K taps (K = 12 in BigVGAN; any K divisible by 4 here), pad = K/2 - 1 and edge-clamped (replicate) x:
  Up      u[n] = 2 * sum_j xr[j] * f_u[n + 3K/2 - 3 - 2j],  xr[j] = x[clamp(j - pad, 0, L - 1)],  n in [0, 2L)
          (replicate pad by `pad`, transposed depthwise conv stride 2, times 2, crop 3K/2 - 3 left: torch's UpSample1d)
  act     a[n] = u + sin(alpha_c u)^2 / (beta_c + 1e-9)   (snake: beta = alpha; log_scale: exp of both)
  Down    y[p] = sum_k f_d[k] * a[clamp(2p + k - pad, 0, 2L - 1)],  p in [0, L)
          (replicate pad (pad, pad + 1), depthwise conv stride 2: torch's DownSample1d / LowPassFilter1d)

Fused form. Write n = 2q + r. Then u[2q + r] is a K/2-tap filter over x[q - K/4 .. q + K/4], and y[p] needs
a[2q + r] only for q in [p - K/4, p + K/4]. A program owns ROWS x (WINDOW - K/2) consecutive outputs of one
(b, c) row, as ROWS tile rows of WINDOW (32) half-rate positions each that overlap by K/2. Per tile row it
loads x (2K/4 + 1 shifted loads of the same cache lines: read from HBM once), forms the even and odd
phases of u and a in registers, and applies the low-pass as a banded matmul on the tensor cores:
y_row = a_even_row @ De + a_odd_row @ Do with De[w, m] = f_d[PAD + 2(w - m - K/4)] and Do the next tap (zero
outside the filter). tf32x3 keeps that float32-exact for float32 storage; 16-bit storage uses tf32. Sines
are sin.approx after a 2-constant reduction to [-pi, pi] on the GPU (~1e-6 absolute), tl.sin elsewhere.
Tiles that touch a row end clamp x's indices (replicate padding of x) and replace a outside [0, 2L) by a[0]
or a[2L - 1] (replicate padding of a); interior tiles skip both. HBM traffic: x read once, y written once.

Launch invariants: x contiguous; grid = rows * tiles, one (b, c) row and one tile per program; x indices are
clamped, never masked; parameters and filters are float32 (the launcher converts them); K <= 24.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.harness.registry import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import check_channel_params, sin
from tilewave.kernels.activation import _snake_inputs, snake_torch

TAPS = 12  # BigVGAN's filters (the ones its CUDA kernel hard-codes)


# ---------------------------------------------------------------------------------------------------
# the filter
# ---------------------------------------------------------------------------------------------------
def kaiser_sinc_filter(cutoff: float, half_width: float, taps: int) -> np.ndarray:
    """Kaiser-windowed sinc low-pass with unit DC gain (Kaiser's beta from the transition width), float64."""
    half = taps // 2
    atten = 2.285 * (half - 1) * math.pi * 4 * half_width + 7.95
    if atten > 50.0:
        beta = 0.1102 * (atten - 8.7)
    elif atten >= 21.0:
        beta = 0.5842 * (atten - 21) ** 0.4 + 0.07886 * (atten - 21.0)
    else:
        beta = 0.0
    t = np.arange(-half, half) + 0.5 if taps % 2 == 0 else np.arange(taps) - half
    f = 2 * cutoff * np.kaiser(taps, beta) * np.sinc(2 * cutoff * t)
    return f / f.sum()


@functools.lru_cache(maxsize=None)
def _resample_filter_cpu(taps: int) -> torch.Tensor:
    return torch.from_numpy(kaiser_sinc_filter(0.25, 0.3, taps)).float()


def resample_filter(taps: int = TAPS, device: torch.device | str = "cpu") -> torch.Tensor:
    """The x2 up/down filter of BigVGAN's Activation1d (cutoff 0.25, half-width 0.3), float32 [taps]."""
    return _resample_filter_cpu(taps).to(device)


# ---------------------------------------------------------------------------------------------------
# kernel
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _activated_phases(x_row, q, L, fu_ptr, alpha, inv_beta, TAPS: tl.constexpr, CLAMP: tl.constexpr,
                      FAST_SIN: tl.constexpr):
    """a[2q] and a[2q + 1] for a tensor of half-rate positions q (x indices clamped when CLAMP)."""
    HALO: tl.constexpr = TAPS // 4
    PAD: tl.constexpr = TAPS // 2 - 1
    CROP: tl.constexpr = 3 * TAPS // 2 - 3
    u_even = tl.zeros(q.shape, tl.float32)
    u_odd = tl.zeros(q.shape, tl.float32)
    for d in tl.static_range(2 * HALO + 1):
        idx = q + (d - HALO)
        if CLAMP:
            idx = tl.minimum(tl.maximum(idx, 0), L - 1)
        xd = tl.load(x_row + idx).to(tl.float32)
        for k in tl.static_range(TAPS):
            # u[2q + r] meets x[q + (r + CROP - k) / 2 - PAD] through tap k when r + CROP - k is even
            if (CROP - k) % 2 == 0:
                if (CROP - k) // 2 - PAD == d - HALO:
                    u_even += tl.load(fu_ptr + k) * xd
            if (CROP + 1 - k) % 2 == 0:
                if (CROP + 1 - k) // 2 - PAD == d - HALO:
                    u_odd += tl.load(fu_ptr + k) * xd
    u_even = 2.0 * u_even
    u_odd = 2.0 * u_odd
    s_even = sin(alpha * u_even, FAST_SIN)
    s_odd = sin(alpha * u_odd, FAST_SIN)
    return u_even + inv_beta * (s_even * s_even), u_odd + inv_beta * (s_odd * s_odd)


@triton.jit
def _act1d_kernel(x_ptr, a_ptr, b_ptr, fu_ptr, fd_ptr, y_ptr, C, L, n_tiles,
                  HAS_BETA: tl.constexpr, LOG_SCALE: tl.constexpr, TAPS: tl.constexpr, ROWS: tl.constexpr,
                  WINDOW: tl.constexpr, FAST_SIN: tl.constexpr, PRECISION: tl.constexpr):
    HALO: tl.constexpr = TAPS // 4
    PAD: tl.constexpr = TAPS // 2 - 1
    OUT_W: tl.constexpr = WINDOW - 2 * HALO
    pid = tl.program_id(0)
    row = pid // n_tiles
    p_tile = (pid % n_tiles) * (ROWS * OUT_W)
    c = row % C
    alpha = tl.load(a_ptr + c)
    if HAS_BETA:
        beta = tl.load(b_ptr + c)
    else:
        beta = alpha
    if LOG_SCALE:
        alpha = tl.exp(alpha)
        beta = tl.exp(beta)
    inv_beta = 1.0 / (beta + 1e-9)
    x_row = x_ptr + row.to(tl.int64) * L

    # window column w of tile row r holds half-rate position q; row r's outputs are p = p_r + m, m < OUT_W
    r_idx = tl.arange(0, ROWS)[:, None]
    w_idx = tl.arange(0, WINDOW)[None, :]
    q = p_tile + r_idx * OUT_W + w_idx - HALO
    if (p_tile >= 2 * HALO) & (p_tile + ROWS * OUT_W + 2 * HALO <= L):
        a_even, a_odd = _activated_phases(x_row, q, L, fu_ptr, alpha, inv_beta, TAPS, False, FAST_SIN)
    else:
        a_even, a_odd = _activated_phases(x_row, q, L, fu_ptr, alpha, inv_beta, TAPS, True, FAST_SIN)
        # replicate padding of the activated signal: a[n < 0] = a[0], a[n >= 2L] = a[2L - 1]
        zero = tl.zeros([1, 1], tl.int32)
        first, _ = _activated_phases(x_row, zero, L, fu_ptr, alpha, inv_beta, TAPS, True, FAST_SIN)
        _, last = _activated_phases(x_row, zero + (L - 1), L, fu_ptr, alpha, inv_beta, TAPS, True, FAST_SIN)
        a_even = tl.where(q < 0, first, tl.where(q >= L, last, a_even))
        a_odd = tl.where(q < 0, first, tl.where(q >= L, last, a_odd))

    # Down as a banded matmul within each row: y[p_r + m] = sum_w a_even[w] De[w, m] + a_odd[w] Do[w, m], where
    # tap k reads a[2p + k - PAD], i.e. phase (k - PAD) mod 2 at column m + HALO + floor((k - PAD) / 2).
    w_col = tl.arange(0, WINDOW)[:, None]
    m_row = tl.arange(0, WINDOW)[None, :]
    k_even = PAD + 2 * (w_col - m_row - HALO)
    d_even = tl.load(fd_ptr + k_even, mask=(k_even >= 0) & (k_even < TAPS), other=0.0)
    d_odd = tl.load(fd_ptr + k_even + 1, mask=(k_even + 1 >= 0) & (k_even + 1 < TAPS), other=0.0)
    acc = tl.dot(a_even, d_even, input_precision=PRECISION)
    acc = tl.dot(a_odd, d_odd, acc, input_precision=PRECISION)
    p = p_tile + r_idx * OUT_W + m_row
    y_row = y_ptr + row.to(tl.int64) * L
    tl.store(y_row + p, acc.to(y_ptr.dtype.element_ty), mask=(m_row < OUT_W) & (p < L))


# ---------------------------------------------------------------------------------------------------
# launcher (Triton path; tilewave.ops.resample decides when to call it)
# ---------------------------------------------------------------------------------------------------
WINDOW = 32  # half-rate positions per tile row; 32 - 2 * (taps / 4) of them are outputs (26 for 12 taps)
ROWS_SMALL, ROWS_LARGE = 16, 64  # the two tile heights the launcher picks from (each a compiled variant)


def _taps(f: torch.Tensor) -> int:
    return f.numel()


def kernel_covers(x: torch.Tensor, up_filter: torch.Tensor, down_filter: torch.Tensor) -> bool:
    """The cases the Triton kernel handles: contiguous x, equal filter lengths divisible by 4, at most 24."""
    k = _taps(up_filter)
    return (x.is_contiguous() and x.dim() in (2, 3) and k == _taps(down_filter) and k % 4 == 0
            and 4 <= k <= 24)


def _precision(dtype: torch.dtype) -> str:
    # the matmul sums <= 12 float32 terms; 16-bit storage tolerates tf32, float32 storage needs tf32x3
    return "tf32x3" if dtype == torch.float32 else "tf32"


def act1d(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False,
          up_filter: torch.Tensor | None = None, down_filter: torch.Tensor | None = None,
          out: torch.Tensor | None = None) -> torch.Tensor:
    up_filter = resample_filter(device=x.device) if up_filter is None else up_filter
    down_filter = resample_filter(device=x.device) if down_filter is None else down_filter
    if not kernel_covers(x, up_filter, down_filter):
        raise ValueError(f"act1d: the kernel needs a contiguous [C, L] or [B, C, L] x and two filters of equal "
                         f"length divisible by 4 (4 to 24 taps); got x {tuple(x.shape)} strides {x.stride()}, "
                         f"filters {_taps(up_filter)} and {_taps(down_filter)} taps")
    C, L = x.shape[-2], x.shape[-1]
    check_channel_params("act1d", C, alpha, beta)
    out = torch.empty_like(x) if out is None else out
    rows = x.numel() // max(L, 1)
    if rows and L:
        taps = _taps(up_filter)
        out_w = WINDOW - 2 * (taps // 4)
        tile_rows = ROWS_SMALL if L <= ROWS_SMALL * out_w else ROWS_LARGE
        n_tiles = triton.cdiv(L, tile_rows * out_w)
        f32 = lambda t: t.detach().reshape(-1).to(torch.float32).contiguous()
        a = f32(alpha)
        _act1d_kernel[(rows * n_tiles,)](
            x, a, a if beta is None else f32(beta), f32(up_filter), f32(down_filter), out, C, L, n_tiles,
            HAS_BETA=beta is not None, LOG_SCALE=log_scale, TAPS=taps, ROWS=tile_rows, WINDOW=WINDOW,
            FAST_SIN=x.is_cuda, PRECISION=_precision(x.dtype), num_warps=4)
    return out


# ---------------------------------------------------------------------------------------------------
# PyTorch peer (also the CPU path of tilewave.ops.resample) and float64 oracle
# ---------------------------------------------------------------------------------------------------
def act1d_torch(x, alpha, beta=None, log_scale=False, up_filter=None, down_filter=None):
    """The eager chain of bigvgan's torch Activation1d: pad, transposed conv, crop, snake, pad, strided conv.
    16-bit x is computed in float32 (as the kernel does) and the result stored in x's dtype."""
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    fu = (resample_filter(device=x.device) if up_filter is None else up_filter).to(work).reshape(1, 1, -1)
    fd = (resample_filter(device=x.device) if down_filter is None else down_filter).to(work).reshape(1, 1, -1)
    x3 = (x if x.dim() == 3 else x.unsqueeze(0)).to(work)
    C, K = x3.shape[1], fu.shape[-1]
    pad = K // 2 - 1
    u = 2 * F.conv_transpose1d(F.pad(x3, (pad, pad), mode="replicate"), fu.expand(C, -1, -1), stride=2, groups=C)
    u = u[..., 2 * pad + (K - 2) // 2: u.shape[-1] - (2 * pad + (K - 1) // 2)]
    a = snake_torch(u, alpha.to(work), None if beta is None else beta.to(work), log_scale)
    Kd = fd.shape[-1]
    a = F.pad(a, (Kd // 2 - (Kd % 2 == 0), Kd // 2), mode="replicate")
    y = F.conv1d(a, fd.expand(C, -1, -1), stride=2, groups=C).to(x.dtype)
    return y if x.dim() == 3 else y.squeeze(0)


def act1d_oracle(x, alpha, beta=None, log_scale=False, up_filter=None, down_filter=None):
    """float64 NumPy, literally: replicate-pad, scatter each input through the filter at stride 2, crop,
    snake, replicate-pad, filter and keep every second sample."""
    x = x.numpy()
    fu = (_resample_filter_cpu(TAPS).double() if up_filter is None else up_filter).numpy().reshape(-1)
    fd = (_resample_filter_cpu(TAPS).double() if down_filter is None else down_filter).numpy().reshape(-1)
    K, L = len(fu), x.shape[-1]
    edge = lambda v, lo, hi: np.pad(v, [(0, 0)] * (v.ndim - 1) + [(lo, hi)], mode="edge")
    pad = K // 2 - 1
    xp = edge(x, pad, pad)
    full = np.zeros(x.shape[:-1] + (2 * (xp.shape[-1] - 1) + K,))
    for k in range(K):
        full[..., k: k + 2 * xp.shape[-1] - 1: 2] += fu[k] * xp
    left = 2 * pad + (K - 2) // 2
    u = 2 * full[..., left: left + 2 * L]
    al = alpha.numpy()[:, None]
    be = al if beta is None else beta.numpy()[:, None]
    if log_scale:
        al, be = np.exp(al), np.exp(be)
    a = u + np.sin(al * u) ** 2 / (be + 1e-9)
    Kd = len(fd)
    ap = edge(a, Kd // 2 - (Kd % 2 == 0), Kd // 2)
    y = sum(fd[k] * ap[..., k: k + 2 * L - 1: 2] for k in range(Kd))
    return torch.from_numpy(y)


# ---------------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------------
def _act1d_inputs(p, dtype, device, gen):
    snakebeta = p["act"] == "snakebeta"
    inputs = _snake_inputs(p, dtype, device, gen, beta=True, log_scale=p["log_scale"])
    if not snakebeta:
        inputs["beta"] = None
    inputs["log_scale"] = p["log_scale"]
    taps = p.get("taps", TAPS)
    inputs["up_filter"] = resample_filter(taps, device)
    inputs["down_filter"] = resample_filter(taps, device)
    return inputs


# BigVGAN v2 24 kHz at 10 s (938 mel frames): the AMP blocks of the six stages and the post activation;
# the two nominal shapes of the kernel catalogue; the seed decoder's stages at 124 latent frames.
_BIGVGAN_V2_SHAPES = [(1, 768, 3752), (1, 384, 15008), (1, 192, 30016), (1, 96, 60032), (1, 48, 120064),
                      (1, 24, 240128)]
_NOMINAL_SHAPES = [(1, 1536, 938), (1, 48, 240000)]
_SEED_DECODER_SHAPES = [(1, 1536, 124), (1, 768, 992), (1, 384, 4960), (1, 192, 19840), (1, 96, 59520)]

_ACT1D_CASES = (
    [Case({"shape": (2, 3, 77), "act": "snakebeta", "log_scale": True}),
     Case({"shape": (5, 123), "act": "snake", "log_scale": False}),
     Case({"shape": (1, 4, 1), "act": "snakebeta", "log_scale": False}),
     Case({"shape": (1, 2, 2), "act": "snake", "log_scale": True}),
     Case({"shape": (1, 2, 5100), "act": "snakebeta", "log_scale": True}),  # interior tiles (no clamping)
     Case({"shape": (2, 2, 1017), "act": "snake", "log_scale": False}),
     Case({"shape": (1, 3, 203), "act": "snakebeta", "log_scale": False, "taps": 8})]
    + [Case({"shape": s, "act": "snakebeta", "log_scale": True}, devices=("cuda",))
       for s in _BIGVGAN_V2_SHAPES + _NOMINAL_SHAPES + _SEED_DECODER_SHAPES]
    + [Case({"shape": (4, 96, 5001), "act": "snake", "log_scale": False}, devices=("cuda",))]
)

_FLOPS_PER_OUTPUT = 2 * (2 * TAPS // 2) + 2 * 5 + 2 * TAPS  # two 6-tap up phases, two snakes, one 12-tap down


def _act1d_bench(label, shape):
    return BenchShape(label, {"shape": shape, "act": "snakebeta", "log_scale": True},
                      flops=lambda p: _FLOPS_PER_OUTPUT * math.prod(p["shape"]),
                      bytes=lambda p, itemsize: 2 * itemsize * math.prod(p["shape"]))


def _act1d_variants():
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    return [AotVariant(f"_act1d_kernel[{dt},beta={hb},log={ls},ROWS={rows}]", _act1d_kernel,
                       {"x_ptr": f"*{dt}", "a_ptr": "*fp32", "b_ptr": "*fp32", "fu_ptr": "*fp32",
                        "fd_ptr": "*fp32", "y_ptr": f"*{dt}", "C": "i32", "L": "i32", "n_tiles": "i32"},
                       {"HAS_BETA": hb, "LOG_SCALE": ls, "TAPS": TAPS, "ROWS": rows, "WINDOW": WINDOW,
                        "FAST_SIN": True, "PRECISION": _precision(dtypes[dt])},
                       num_warps=4, expect_mma=True)
            for dt in dtypes for hb in (False, True) for ls in (False, True) for rows in (ROWS_SMALL, ROWS_LARGE)]


register(Kernel(
    name="act1d", family="resample",
    doc="y = lowpass_stride2(snake(upsample2(x))): BigVGAN's anti-aliased activation in one pass",
    make_inputs=_act1d_inputs, alloc_out=lambda i: torch.empty_like(i["x"]), launch=act1d,
    oracle=act1d_oracle, peer=act1d_torch, cases=_ACT1D_CASES,
    bench=[_act1d_bench("BigVGAN v2 stage 1 AMP [1, 768, 3752]", (1, 768, 3752)),
           _act1d_bench("BigVGAN v2 last stage AMP [1, 24, 240128]", (1, 24, 240128)),
           _act1d_bench("seed decoder block 4 [1, 96, 59520]", (1, 96, 59520)),
           _act1d_bench("large [1, 128, 1048576]", (1, 128, 1 << 20))],
    variants=_act1d_variants,
))
