"""What the spectral kernels share: the window and DFT bases, atan2, reflect padding, the spectrum tile and the
dot precision of the FFT forms."""
from __future__ import annotations

import functools
import os

import numpy as np
import torch
import triton
import triton.language as tl

from tilewave.precision import check as check_precision


GEMM_WARPS = 8
# The interpreter runs one program at a time and pays per tl op, not per element: wide tiles there keep the
# n_fft 1024 tests to seconds (each module widens its own tables). The GPU tiles are the ones the AOT variants compile.
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def atan2(y, x):
    # libdevice.atan2 does not run in the interpreter. Cephes atanf on |y|/|x| folded into [0, 1], reduced to
    # [-tan(pi/8), tan(pi/8)]: ~1 float32 ulp. Signs of zeros are ignored: atan2(±0, x<0) = +pi (one phase for
    # real-valued bins) and atan2(±0, ±0) = 0.
    ax = tl.abs(x)
    ay = tl.abs(y)
    hi = tl.maximum(ax, ay)
    lo = tl.minimum(ax, ay)
    a = lo / tl.where(hi == 0.0, 1.0, hi)
    big = a > 0.41421356237309503
    z = tl.where(big, (a - 1.0) / (a + 1.0), a)
    z2 = z * z
    r = (((8.05374449538e-2 * z2 - 1.38776856032e-1) * z2 + 1.99777106478e-1) * z2 - 3.33329491539e-1) * z2 * z + z
    r = tl.where(big, r + 0.7853981633974483, r)
    r = tl.where(ay > ax, 1.5707963267948966 - r, r)
    r = tl.where(x < 0.0, 3.141592653589793 - r, r)
    return tl.where(y < 0.0, -r, r)


@triton.jit
def _reflect(q, N):
    q = tl.where(q < 0, -q, q)
    return tl.where(q >= N, 2 * N - 2 - q, q)


@triton.jit
def _spectrum_tile(x_row, cos_ptr, sin_ptr, t, f, N, T, hop, pad, NF,
                   N_FFT: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    # (Re, Im) [BLOCK_T, BLOCK_F] of frames t and bins f: gathered frames [BLOCK_T, BLOCK_K] @ basis [BLOCK_K, BLOCK_F].
    re = tl.zeros((t.shape[0], f.shape[0]), dtype=tl.float32)
    im = tl.zeros((t.shape[0], f.shape[0]), dtype=tl.float32)
    for k0 in range(0, N_FFT, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        q = _reflect(t[:, None] * hop + k[None, :] - pad, N)
        frames = tl.load(x_row + q, mask=(t[:, None] < T) & (k[None, :] < N_FFT), other=0.0).to(tl.float32)
        bmask = (k[:, None] < N_FFT) & (f[None, :] < NF)
        boffs = k[:, None] * NF + f[None, :]
        cb = tl.load(cos_ptr + boffs, mask=bmask, other=0.0)
        sb = tl.load(sin_ptr + boffs, mask=bmask, other=0.0)
        re = tl.dot(frames, cb, re, input_precision=PRECISION)
        im = tl.dot(frames, sb, im, input_precision=PRECISION)
    return re, im


@triton.jit
def _store_spectrum(a_ptr, b_ptr, offs, mask, re, im, POLAR: tl.constexpr):
    # POLAR: (magnitude, phase), what the ops return; else (Re, Im), continuous everywhere, which the registry
    # checks (a phase near the negative real axis may land on either side of ±pi under float32 rounding).
    if POLAR:
        a = tl.sqrt(re * re + im * im)
        c = atan2(im, re)
    else:
        a = re
        c = im
    tl.store(a_ptr + offs, a.to(a_ptr.dtype.element_ty), mask=mask)
    tl.store(b_ptr + offs, c.to(b_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _polar_to_cartesian(a_ptr, c_ptr, offs, mask, EXP_SIN: tl.constexpr, FAST: tl.constexpr):
    mag = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    ph = tl.load(c_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if EXP_SIN:
        mag = tl.where(mask, tl.exp(mag), 0.0)
        ph, _ = _sincos(ph, FAST)
    s, c = _sincos(ph, FAST)
    return mag * c, mag * s


@triton.jit
def _sincos(x, FAST: tl.constexpr):
    # (sin x, cos x). FAST (GPU only: inline PTX): the Cody-Waite reduction of tilewave.kernels._common.sin,
    # then the SFU's sin.approx/cos.approx (~1e-6 absolute on [-pi, pi]); libdevice's pair costs ~50 instructions
    # per element and made the small inverse transform compute-bound.
    if FAST:
        k = tl.floor(x * 0.15915494309189535 + 0.5)
        x = x - k * 6.28125 - k * 0.0019353071795864769
    return _sincos_unreduced(x, FAST)


@triton.jit
def _sincos_unreduced(x, FAST: tl.constexpr):
    # (sin x, cos x) without a range reduction: the SFU takes any argument (its error grows ~|x|·2^-24 rad), and a
    # sine's output (|x| <= 1) needs none at all
    if FAST:
        s = tl.inline_asm_elementwise("sin.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
        c = tl.inline_asm_elementwise("cos.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    else:
        s = tl.sin(x)
        c = tl.cos(x)
    return s, c


@triton.constexpr_function
def _bit_reverse(c, bits):
    return int(f"{c:0{bits}b}"[::-1], 2) if bits else 0


@triton.constexpr_function
def _strided_sum(values, start, step):
    return sum(values[start::step])


@triton.jit
def _exp_fast(x, FAST: tl.constexpr):
    # FAST: ex2.approx.ftz (one SFU op after the scale; exp() adds a subnormal fix-up of three more per element)
    if FAST:
        y = tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [x * 1.4426950408889634], dtype=tl.float32,
                                      is_pure=True, pack=1)
    else:
        y = tl.exp(x)
    return y


def padded_hann(n_fft: int, win_length: int) -> np.ndarray:
    """Periodic Hann of win_length, zero-padded centred to n_fft (torch.stft's placement)."""
    if not 0 < win_length <= n_fft:
        raise ValueError(f"win_length must be in (0, n_fft={n_fft}], got {win_length}")
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(win_length) / win_length)
    left = (n_fft - win_length) // 2
    return np.pad(w, (left, n_fft - win_length - left))


def _cos_sin(n_fft: int) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin of 2π·k·n/n_fft [n_fft, F]. (k·n) mod n_fft is exact in integers, so large k·n lose no accuracy;
    the sine is exactly 0 at angles 0 and π, so DC and Nyquist have an exactly zero imaginary part."""
    n, k = np.arange(n_fft)[:, None], np.arange(n_fft // 2 + 1)[None, :]
    m = (n * k) % n_fft
    ang = 2 * np.pi * m / n_fft
    return np.cos(ang), np.where((2 * m) % n_fft == 0, 0.0, np.sin(ang))


@functools.lru_cache(maxsize=32)
def _bases(n_fft: int, win_length: int, device: str) -> dict[str, torch.Tensor]:
    """Forward basis w·cos, −w·sin [n_fft, F]; inverse basis c_k·w·cos/n, −c_k·w·sin/n [n_fft, F] (c_k = 2 except
    DC and, for even n_fft, Nyquist: the one-sided spectrum's doubling); its unwindowed first half c_k·cos/n,
    −c_k·sin/n [n_fft//2 + 1, F] (even, odd); w and w² [n_fft]."""
    w = padded_hann(n_fft, win_length)[:, None]
    cos, sin = _cos_sin(n_fft)
    c = np.full(n_fft // 2 + 1, 2.0)
    c[0] = 1.0
    if n_fft % 2 == 0:
        c[-1] = 1.0
    half = n_fft // 2 + 1
    tables = {"cos": w * cos, "sin": -w * sin, "icos": c * w * cos / n_fft, "isin": -c * w * sin / n_fft,
              "wsq": w[:, 0] ** 2, "even": c * cos[:half] / n_fft, "odd": -c * sin[:half] / n_fft, "win": w[:, 0]}
    return {k: torch.tensor(v, dtype=torch.float32, device=device) for k, v in tables.items()}


def _check_contiguous(name: str, **tensors: torch.Tensor) -> None:
    for arg, t in tensors.items():
        if not t.is_contiguous():
            raise ValueError(f"{name}: {arg} must be contiguous, got strides {t.stride()} for shape {tuple(t.shape)}")


def _frames(name: str, N: int, n_fft: int, hop: int, pad: int) -> int:
    if hop < 1:
        raise ValueError(f"{name}: hop must be >= 1, got {hop}")
    if pad and pad >= N:
        raise ValueError(f"{name}: reflect padding {pad} needs a signal longer than it, got {N} samples")
    if N + 2 * pad < n_fft:
        raise ValueError(f"{name}: {N} samples (+{pad} padding per side) is shorter than n_fft={n_fft}")
    return 1 + (N + 2 * pad - n_fft) // hop


def _fft_precision(precision: str, dtype: torch.dtype) -> str:
    """The FFT kernels' dot precision: as asked for float32 data; 16-bit data takes tf32 when "ieee" is asked for,
    since tf32's ~1e-3 relative error is far below what 16-bit storage resolves (faster than the FMA path, and
    within the float16/bfloat16 tolerance rows: benchmarks/RESULTS.md)."""
    precision = check_precision(precision)
    return "tf32" if precision == "ieee" and dtype in (torch.float16, torch.bfloat16) else precision


def _hann_t(n, like):
    return torch.hann_window(n, periodic=True, device=like.device, dtype=like.dtype)
