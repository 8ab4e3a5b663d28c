"""Log-mel spectrograms (fused with the DFT, or the FFT spectrum then a filterbank GEMM) and the Slaney filterbank."""
from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

from tilewave.kernels.spectral.common import (INTERPRETED, GEMM_WARPS, _bases, _check_contiguous, _fft_precision,
                                              _frames, _spectrum_tile)
from tilewave.kernels.spectral.dft import _spectrum_oracle, stft_torch
from tilewave.kernels.spectral.fft import _stft_fft_launch, fft_split
from tilewave.precision import check as check_precision


# The fused mel keeps every bin of a frame tile in one program. At batch 1 (10 s = 938 frames) 64-frame tiles
# give 15 programs for 132 SMs, so inputs with fewer than MEL_WIDE_PROGRAMS wide tiles take 16-frame tiles.
MEL_TILES = ((16, 64), (64, 32))  # (frames, bins per step)

MEL_BLOCK_K, MEL_BLOCK_M, MEL_WIDE_PROGRAMS = 32, 128, 264

# filterbank GEMM tiles (frames, mel bands, bins per step, warps): narrow while wide tiles would leave SMs idle
MEL_PROJECT_TILES = ((16, 128, 16, 4), (64, 128, 32, 8))


if INTERPRETED:  # wide tiles on the interpreter (common.INTERPRETED)
    MEL_TILES, MEL_BLOCK_K = ((16, 256), (64, 256)), 256
    MEL_PROJECT_TILES = ((16, 128, 256, 4), (64, 128, 256, 4))


@triton.jit
def _mel_project_kernel(s_ptr, mel_ptr, out_ptr, T, NF, NM, log_eps, PRECISION: tl.constexpr,
                        BLOCK_T: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (B, cdiv(T, BLOCK_T), cdiv(NM, BLOCK_M)); out [B, NM, T] = log(max(S [B, T, NF] @ melᵀ, log_eps)).
    b = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    m = tl.program_id(2) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_T, BLOCK_M), dtype=tl.float32)
    for k0 in range(0, NF, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        sp = tl.load(s_ptr + (b * T + t[:, None]) * NF + k[None, :], mask=(t[:, None] < T) & (k[None, :] < NF),
                     other=0.0)
        fb = tl.load(mel_ptr + m[None, :] * NF + k[:, None], mask=(k[:, None] < NF) & (m[None, :] < NM), other=0.0)
        acc = tl.dot(sp, fb.to(tl.float32), acc, input_precision=PRECISION)
    out = tl.log(tl.maximum(acc, log_eps))
    tl.store(out_ptr + (b * NM + m[None, :]) * T + t[:, None], out.to(out_ptr.dtype.element_ty),
             mask=(t[:, None] < T) & (m[None, :] < NM))


@triton.jit
def _mel_kernel(x_ptr, cos_ptr, sin_ptr, mel_ptr, out_ptr, N, T, hop, pad, NF, NM, mag_eps, log_eps,
                N_FFT: tl.constexpr, MAGNITUDE: tl.constexpr, PRECISION: tl.constexpr,
                BLOCK_T: tl.constexpr, BLOCK_F: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_M: tl.constexpr):
    # grid: (B, cdiv(T, BLOCK_T), cdiv(NM, BLOCK_M)); bin tiles are reduced into the mel tile in registers.
    b = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    m = tl.program_id(2) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_T, BLOCK_M), dtype=tl.float32)
    for f0 in range(0, NF, BLOCK_F):
        f = f0 + tl.arange(0, BLOCK_F)
        re, im = _spectrum_tile(x_ptr + b * N, cos_ptr, sin_ptr, t, f, N, T, hop, pad, NF, N_FFT, BLOCK_K, PRECISION)
        spec = re * re + im * im
        if MAGNITUDE:
            spec = tl.sqrt(spec + mag_eps)
        # padding bins (f >= NF) carry sqrt(mag_eps); the filterbank's zero rows there keep them out.
        fb = tl.load(mel_ptr + m[None, :] * NF + f[:, None], mask=(f[:, None] < NF) & (m[None, :] < NM), other=0.0)
        acc = tl.dot(spec, fb.to(tl.float32), acc, input_precision=PRECISION)
    out = tl.log(tl.maximum(acc, log_eps))
    offs = (b * NM + m[None, :]) * T + t[:, None]
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=(t[:, None] < T) & (m[None, :] < NM))


def mel_spectrogram(x: torch.Tensor, mel_basis: torch.Tensor, n_fft: int, hop: int, win_length: int | None = None,
                    pad: int | None = None, magnitude: bool = False, mag_eps: float = 1e-9, eps: float = 1e-5,
                    precision: str = "ieee", out: torch.Tensor | None = None) -> torch.Tensor:
    """x [B, N] -> log(max(mel_basis @ S, eps)) [B, n_mels, T]; S = |X|² or √(|X|² + mag_eps) when magnitude."""
    _check_contiguous("mel_spectrogram", x=x, mel_basis=mel_basis)
    win_length = win_length or n_fft
    pad = n_fft // 2 if pad is None else pad
    B, N = x.shape
    NF = n_fft // 2 + 1
    if mel_basis.dim() != 2 or mel_basis.shape[1] != NF:
        raise ValueError(f"mel_spectrogram: mel_basis must be [n_mels, n_fft//2 + 1 = {NF}], got {tuple(mel_basis.shape)}")
    NM = mel_basis.shape[0]
    T = _frames("mel_spectrogram", N, n_fft, hop, pad)
    out = x.new_empty(B, NM, T) if out is None else out
    basis = _bases(n_fft, win_length, str(x.device))
    if B and T and NM and fft_split(n_fft):
        prec = _fft_precision(precision, x.dtype)
        spec = torch.empty(B, T, NF, device=x.device, dtype=torch.float32)
        _stft_fft_launch(x, n_fft, hop, win_length, pad, T, spec, spec, polar=False, power=True, magnitude=magnitude,
                         mag_eps=mag_eps, precision=prec)
        bt, bm, bk, warps = MEL_PROJECT_TILES[B * triton.cdiv(T, MEL_PROJECT_TILES[1][0]) >= MEL_WIDE_PROGRAMS]
        _mel_project_kernel[(B, triton.cdiv(T, bt), triton.cdiv(NM, bm))](
            spec, mel_basis, out, T, NF, NM, float(eps), PRECISION=prec, BLOCK_T=bt, BLOCK_M=bm, BLOCK_K=bk,
            num_warps=warps)
    elif B and T and NM:
        # tf32x3's split operands do not fit the wide tile's registers
        wide = B * triton.cdiv(T, MEL_TILES[1][0]) >= MEL_WIDE_PROGRAMS and precision != "tf32x3"
        bt, bf = MEL_TILES[wide]
        grid = (B, triton.cdiv(T, bt), triton.cdiv(NM, MEL_BLOCK_M))
        _mel_kernel[grid](x, basis["cos"], basis["sin"], mel_basis, out, N, T, hop, pad, NF, NM,
                          float(mag_eps), float(eps), N_FFT=n_fft, MAGNITUDE=magnitude,
                          PRECISION=check_precision(precision), BLOCK_T=bt, BLOCK_F=bf, BLOCK_K=MEL_BLOCK_K,
                          BLOCK_M=MEL_BLOCK_M, num_warps=GEMM_WARPS)
    return out


def mel_spectrogram_magnitude(x, mel_basis, n_fft, hop, win_length=None, pad=None, mag_eps=1e-9, eps=1e-5,
                              precision="ieee", out=None):
    return mel_spectrogram(x, mel_basis, n_fft, hop, win_length, pad, True, mag_eps, eps, precision, out)


def mel_oracle(x, mel_basis, n_fft, hop, win_length=None, pad=None, magnitude=False, mag_eps=1e-9, eps=1e-5,
               precision="ieee"):
    spec = _spectrum_oracle(x.numpy(), n_fft, hop, win_length or n_fft, n_fft // 2 if pad is None else pad)
    s = spec.real ** 2 + spec.imag ** 2
    if magnitude:
        s = np.sqrt(s + mag_eps)
    return torch.from_numpy(np.log(np.maximum(np.einsum("mf,bft->bmt", mel_basis.numpy(), s), eps)))


def mel_torch(x, mel_basis, n_fft, hop, win_length=None, pad=None, magnitude=False, mag_eps=1e-9, eps=1e-5):
    re, im = stft_torch(x, n_fft, hop, win_length, pad, polar=False)
    s = re ** 2 + im ** 2
    if magnitude:
        s = torch.sqrt(s + mag_eps)
    return torch.log(torch.clamp(torch.matmul(mel_basis, s), min=eps))


