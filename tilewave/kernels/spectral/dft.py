"""The forward STFT: a direct DFT in registers (small n_fft), a DFT as a GEMM (other sizes), and `stft`, which picks
them or the FFT."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.kernels.spectral.common import (INTERPRETED, GEMM_WARPS, _bases, _check_contiguous, _fft_precision,
                                              _frames, _hann_t, _reflect, _spectrum_tile, _store_spectrum, padded_hann)
from tilewave.kernels.spectral.fft import _stft_fft_launch, fft_split
from tilewave.precision import check as check_precision


DIRECT_MAX_NFFT = 64

DIRECT_BLOCK_T = 128

# Tiles sized so that no variant spills on sm_90 (the AOT gate checks ptxas's report); 8 warps each.
STFT_TILE = (64, 64, 32)          # frames, bins, taps per step
if INTERPRETED:
    STFT_TILE = (64, 256, 256)


@triton.jit
def _stft_direct_kernel(x_ptr, cos_ptr, sin_ptr, mag_ptr, phase_ptr, N, T, hop, pad,
                        N_FFT: tl.constexpr, NF: tl.constexpr, POLAR: tl.constexpr,
                        BLOCK_T: tl.constexpr, BLOCK_F: tl.constexpr):
    # grid: (B, cdiv(T, BLOCK_T)); every bin of BLOCK_T frames, one signal sample per frame per tap.
    b = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    f = tl.arange(0, BLOCK_F)
    tmask = t < T
    fmask = f < NF
    x_row = x_ptr + b * N
    re = tl.zeros((BLOCK_T, BLOCK_F), dtype=tl.float32)
    im = tl.zeros((BLOCK_T, BLOCK_F), dtype=tl.float32)
    for n in tl.static_range(N_FFT):
        xv = tl.load(x_row + _reflect(t * hop + n - pad, N), mask=tmask, other=0.0).to(tl.float32)
        cb = tl.load(cos_ptr + n * NF + f, mask=fmask, other=0.0)
        sb = tl.load(sin_ptr + n * NF + f, mask=fmask, other=0.0)
        re += xv[:, None] * cb[None, :]
        im += xv[:, None] * sb[None, :]
    offs = (b * NF + f[None, :]) * T + t[:, None]
    mask = tmask[:, None] & fmask[None, :]
    _store_spectrum(mag_ptr, phase_ptr, offs, mask, re, im, POLAR)


@triton.jit
def _stft_gemm_kernel(x_ptr, cos_ptr, sin_ptr, mag_ptr, phase_ptr, N, T, hop, pad, NF,
                      N_FFT: tl.constexpr, POLAR: tl.constexpr, PRECISION: tl.constexpr,
                      BLOCK_T: tl.constexpr, BLOCK_F: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (B, cdiv(T, BLOCK_T), cdiv(NF, BLOCK_F)).
    b = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    f = tl.program_id(2) * BLOCK_F + tl.arange(0, BLOCK_F)
    re, im = _spectrum_tile(x_ptr + b * N, cos_ptr, sin_ptr, t, f, N, T, hop, pad, NF, N_FFT, BLOCK_K, PRECISION)
    offs = (b * NF + f[None, :]) * T + t[:, None]
    mask = (t[:, None] < T) & (f[None, :] < NF)
    _store_spectrum(mag_ptr, phase_ptr, offs, mask, re, im, POLAR)


def stft(x: torch.Tensor, n_fft: int, hop: int, win_length: int | None = None, pad: int | None = None,
         polar: bool = True, precision: str = "ieee", out: tuple[torch.Tensor, torch.Tensor] | None = None):
    """x [B, N] -> (magnitude, phase) [B, n_fft//2 + 1, T], or (Re, Im) when not polar; pad defaults to
    n_fft//2 (center=True)."""
    _check_contiguous("stft", x=x)
    win_length = win_length or n_fft
    pad = n_fft // 2 if pad is None else pad
    B, N = x.shape
    T = _frames("stft", N, n_fft, hop, pad)
    NF = n_fft // 2 + 1
    mag, phase = out if out is not None else (x.new_empty(B, NF, T), x.new_empty(B, NF, T))
    basis = _bases(n_fft, win_length, str(x.device))
    if B and T:
        if n_fft <= DIRECT_MAX_NFFT:
            _stft_direct_kernel[(B, triton.cdiv(T, DIRECT_BLOCK_T))](
                x, basis["cos"], basis["sin"], mag, phase, N, T, hop, pad, N_FFT=n_fft, NF=NF, POLAR=polar,
                BLOCK_T=DIRECT_BLOCK_T, BLOCK_F=triton.next_power_of_2(NF), num_warps=4)
        elif fft_split(n_fft):
            _stft_fft_launch(x, n_fft, hop, win_length, pad, T, mag, phase, polar=polar, power=False, magnitude=False,
                             mag_eps=0.0, precision=_fft_precision(precision, x.dtype))
        else:
            bt, bf, bk = STFT_TILE
            grid = (B, triton.cdiv(T, bt), triton.cdiv(NF, bf))
            _stft_gemm_kernel[grid](x, basis["cos"], basis["sin"], mag, phase, N, T, hop, pad, NF, N_FFT=n_fft, POLAR=polar,
                                    PRECISION=check_precision(precision), BLOCK_T=bt, BLOCK_F=bf, BLOCK_K=bk,
                                    num_warps=GEMM_WARPS)
    return mag, phase


def _spectrum_oracle(x: np.ndarray, n_fft: int, hop: int, win_length: int, pad: int) -> np.ndarray:
    """Complex one-sided spectrum [B, F, T] by np.fft.rfft of reflect-padded, windowed frames."""
    if pad:
        x = np.pad(x, ((0, 0), (pad, pad)), mode="reflect")
    T = 1 + (x.shape[-1] - n_fft) // hop
    frames = x[:, np.arange(T)[:, None] * hop + np.arange(n_fft)[None, :]] * padded_hann(n_fft, win_length)
    spec = np.fft.rfft(frames, axis=-1).transpose(0, 2, 1)
    return spec.real + 1j * (spec.imag + 0.0)  # + 0.0 turns -0 into +0: real bins get phase +π, as atan2 does


def stft_oracle(x, n_fft, hop, win_length=None, pad=None, polar=True, precision="ieee"):
    spec = _spectrum_oracle(x.numpy(), n_fft, hop, win_length or n_fft, n_fft // 2 if pad is None else pad)
    a, c = (np.abs(spec), np.angle(spec)) if polar else (spec.real, spec.imag)
    return torch.from_numpy(a), torch.from_numpy(np.ascontiguousarray(c))


def stft_torch(x, n_fft, hop, win_length=None, pad=None, polar=True):
    win_length = win_length or n_fft
    pad = n_fft // 2 if pad is None else pad
    xp = F.pad(x[:, None], (pad, pad), mode="reflect")[:, 0] if pad else x
    spec = torch.stft(xp, n_fft, hop, win_length, window=_hann_t(win_length, x), center=False, return_complex=True)
    return (spec.abs(), spec.angle()) if polar else (spec.real, spec.imag)
