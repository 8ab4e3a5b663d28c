"""Anti-aliased activation (BigVGAN's AMP blocks), fused: upsample x2 -> snake/snakebeta -> low-pass, stride 2.

act1d   y = Down(act(Up(x)))                     x, y [B, C, L] or [C, L]; alpha, beta [C]; filters f_u, f_d [K]

With K taps (K = 12 in BigVGAN; any K divisible by 4 here), pad = K/2 - 1 and edge-clamped (replicate) x:
  Up      u[n] = 2 * sum_j xr[j] * f_u[n + 3K/2 - 3 - 2j],  xr[j] = x[clamp(j - pad, 0, L - 1)],  n in [0, 2L)
          (replicate pad by `pad`, transposed depthwise conv stride 2, times 2, crop 3K/2 - 3 left: torch's UpSample1d)
  act     a[n] = u + sin(alpha_c u)^2 / (beta_c + 1e-9)   (snake: beta = alpha; log_scale: exp of both)
  Down    y[p] = sum_k f_d[k] * a[clamp(2p + k - pad, 0, 2L - 1)],  p in [0, L)
          (replicate pad (pad, pad + 1), depthwise conv stride 2: torch's DownSample1d / LowPassFilter1d)

Fused form. Write n = 2q + r. Then u[2q + r] is a K/2-tap filter over x[q - K/4 .. q + K/4], and y[p] needs
a[2q + r] only for q in [p - K/4, p + K/4]. A program owns BLOCK - K/2 consecutive outputs of one row: it
loads x once over its tile plus a K/4 halo (2K/4 + 1 shifted loads of the same cache lines), forms the even
and odd phases of u and a in registers (each sin evaluated once), and applies the low-pass by gathering
shifted phases within the tile (tl.gather). The replicate padding of a at the row ends (a[0] for n < 0,
a[2L - 1] for n >= 2L) is taken from the tile itself, which always holds those samples when they are needed.
HBM traffic: x read once, y written once; arithmetic in float32 whatever the storage dtype.

Launch invariants: x contiguous; grid = rows * tiles, one row (b, c) and one tile per program; the x index is
clamped, never masked; parameters and filters are float32 (the launcher converts them).
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
from tilewave.kernels.activation import _snake_inputs, snake_torch

TAPS = 12  # BigVGAN's filters (the ones its CUDA kernel hard-codes)
BLOCK_SMALL, BLOCK_LARGE = 128, 1024  # the two tiles the launcher picks from (each a compiled variant)


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
def _act1d_kernel(x_ptr, a_ptr, b_ptr, fu_ptr, fd_ptr, y_ptr, C, L, n_tiles,
                  HAS_BETA: tl.constexpr, LOG_SCALE: tl.constexpr, TAPS: tl.constexpr, BLOCK: tl.constexpr):
    HALO: tl.constexpr = TAPS // 4
    OUT: tl.constexpr = BLOCK - 2 * HALO
    PAD: tl.constexpr = TAPS // 2 - 1
    CROP: tl.constexpr = 3 * TAPS // 2 - 3
    pid = tl.program_id(0)
    row = pid // n_tiles
    p0 = (pid % n_tiles) * OUT
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
    base = row.to(tl.int64) * L

    # Up: the even (r = 0) and odd (r = 1) phases at half-rate positions q = p0 - HALO + j.
    j = tl.arange(0, BLOCK)
    q = p0 - HALO + j
    u_even = tl.zeros([BLOCK], tl.float32)
    u_odd = tl.zeros([BLOCK], tl.float32)
    for d in tl.static_range(2 * HALO + 1):
        xd = tl.load(x_ptr + base + tl.minimum(tl.maximum(q + (d - HALO), 0), L - 1)).to(tl.float32)
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
    s_even = tl.sin(alpha * u_even)
    s_odd = tl.sin(alpha * u_odd)
    a_even = u_even + inv_beta * (s_even * s_even)
    a_odd = u_odd + inv_beta * (s_odd * s_odd)
    # replicate padding of the activated signal: a[0] and a[2L - 1], present in the tile whenever needed
    a_first = tl.sum(tl.where(q == 0, a_even, 0.0), axis=0)
    a_last = tl.sum(tl.where(q == L - 1, a_odd, 0.0), axis=0)

    # Down: y[p] = sum_k f_d[k] a[2p + k - PAD]; sample 2p + k - PAD is phase (k - PAD) mod 2 at q = p + shift.
    i = tl.arange(0, BLOCK)
    p = p0 + i
    acc = tl.zeros([BLOCK], tl.float32)
    for k in tl.static_range(TAPS):
        idx = tl.minimum(i + (HALO + (k - PAD + 2 * TAPS) // 2 - TAPS), BLOCK - 1)
        if (k - PAD + 2 * TAPS) % 2 == 0:
            v = tl.gather(a_even, idx, 0)
        else:
            v = tl.gather(a_odd, idx, 0)
        n = 2 * p + (k - PAD)
        v = tl.where(n < 0, a_first, tl.where(n > 2 * L - 1, a_last, v))
        acc += tl.load(fd_ptr + k) * v
    tl.store(y_ptr + base + p, acc.to(y_ptr.dtype.element_ty), mask=(i < OUT) & (p < L))


# ---------------------------------------------------------------------------------------------------
# launcher (Triton path; tilewave.ops.resample decides when to call it)
# ---------------------------------------------------------------------------------------------------
def _taps(f: torch.Tensor) -> int:
    return f.numel()


def kernel_covers(x: torch.Tensor, up_filter: torch.Tensor, down_filter: torch.Tensor) -> bool:
    """The cases the Triton kernel handles: contiguous x, equal filter lengths divisible by 4."""
    k = _taps(up_filter)
    return x.is_contiguous() and x.dim() in (2, 3) and k == _taps(down_filter) and k % 4 == 0 and k >= 4


def _pick_block(L: int, taps: int) -> int:
    return BLOCK_SMALL if L + taps // 2 <= BLOCK_SMALL else BLOCK_LARGE


def act1d(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False,
          up_filter: torch.Tensor | None = None, down_filter: torch.Tensor | None = None,
          out: torch.Tensor | None = None) -> torch.Tensor:
    up_filter = resample_filter(device=x.device) if up_filter is None else up_filter
    down_filter = resample_filter(device=x.device) if down_filter is None else down_filter
    if not kernel_covers(x, up_filter, down_filter):
        raise ValueError(f"act1d: the kernel needs a contiguous [C, L] or [B, C, L] x and two filters of equal "
                         f"length divisible by 4; got x {tuple(x.shape)} strides {x.stride()}, filters "
                         f"{_taps(up_filter)} and {_taps(down_filter)} taps")
    C, L = x.shape[-2], x.shape[-1]
    if alpha.numel() != C or (beta is not None and beta.numel() != C):
        raise ValueError(f"act1d: parameters must have one value per channel ({C}), got alpha "
                         f"{tuple(alpha.shape)}" + ("" if beta is None else f", beta {tuple(beta.shape)}"))
    out = torch.empty_like(x) if out is None else out
    rows = x.numel() // max(L, 1)
    if rows and L:
        taps = _taps(up_filter)
        BLOCK = _pick_block(L, taps)
        n_tiles = triton.cdiv(L, BLOCK - taps // 2)
        f32 = lambda t: t.detach().reshape(-1).to(torch.float32).contiguous()
        a = f32(alpha)
        _act1d_kernel[(rows * n_tiles,)](
            x, a, a if beta is None else f32(beta), f32(up_filter), f32(down_filter), out, C, L, n_tiles,
            HAS_BETA=beta is not None, LOG_SCALE=log_scale, TAPS=taps, BLOCK=BLOCK,
            num_warps=4 if BLOCK == BLOCK_LARGE else 1)
    return out


# ---------------------------------------------------------------------------------------------------
# PyTorch peer (also the CPU path of tilewave.ops.resample) and float64 oracle
# ---------------------------------------------------------------------------------------------------
def act1d_torch(x, alpha, beta=None, log_scale=False, up_filter=None, down_filter=None):
    """The eager chain of bigvgan's torch Activation1d: pad, transposed conv, crop, snake, pad, strided conv."""
    fu = (resample_filter(device=x.device) if up_filter is None else up_filter).to(x.dtype).reshape(1, 1, -1)
    fd = (resample_filter(device=x.device) if down_filter is None else down_filter).to(x.dtype).reshape(1, 1, -1)
    x3 = x if x.dim() == 3 else x.unsqueeze(0)
    C, K = x3.shape[1], fu.shape[-1]
    pad = K // 2 - 1
    u = 2 * F.conv_transpose1d(F.pad(x3, (pad, pad), mode="replicate"), fu.expand(C, -1, -1), stride=2, groups=C)
    u = u[..., 2 * pad + (K - 2) // 2: u.shape[-1] - (2 * pad + (K - 1) // 2)]
    a = snake_torch(u, alpha, beta, log_scale)
    Kd = fd.shape[-1]
    a = F.pad(a, (Kd // 2 - (Kd % 2 == 0), Kd // 2), mode="replicate")
    y = F.conv1d(a, fd.expand(C, -1, -1), stride=2, groups=C)
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
     Case({"shape": (1, 3, 1500), "act": "snakebeta", "log_scale": True}),
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
    return [AotVariant(f"_act1d_kernel[{dt},beta={hb},log={ls},BLOCK={blk}]", _act1d_kernel,
                       {"x_ptr": f"*{dt}", "a_ptr": "*fp32", "b_ptr": "*fp32", "fu_ptr": "*fp32",
                        "fd_ptr": "*fp32", "y_ptr": f"*{dt}", "C": "i32", "L": "i32", "n_tiles": "i32"},
                       {"HAS_BETA": hb, "LOG_SCALE": ls, "TAPS": TAPS, "BLOCK": blk},
                       num_warps=4 if blk == BLOCK_LARGE else 1)
            for dt in ("fp32", "fp16", "bf16") for hb in (False, True) for ls in (False, True)
            for blk in (BLOCK_SMALL, BLOCK_LARGE)]


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
