"""Spectral kernels: STFT, inverse STFT, log-mel spectrograms and the harmonic (sine) source.

stft                  x [B, N] -> magnitude |X|, phase atan2(Im X, Re X), each [B, F, T], F = n_fft//2 + 1:
                      X[b, k, t] = Σ_n w[n]·xp[b, t·hop + n]·e^{-2πi·k·n/n_fft}, xp = x reflect-padded by
                      `pad` on both sides (n_fft//2 is torch.stft's center=True), T = 1 + (N + 2·pad − n_fft)//hop,
                      w the periodic Hann window of win_length zero-padded (centred) to n_fft.
istft                 (magnitude, phase) [B, F, T] -> y [B, hop·(T−1) + n_fft − 2·(n_fft//2)]: overlap-add of the
                      windowed inverse real DFTs divided by Σ_t w²[p − t·hop] (torch.istft, center=True).
istft_exp_sin         x [B, 2F, T] -> istft(exp(x[:, :F]), sin(x[:, F:])): the iSTFTNet generator tail, one kernel.
mel_spectrogram       log(max(M·(Re² + Im²), eps)), M the filterbank [n_mels, F]; out [B, n_mels, T].
mel_spectrogram_magnitude  the same with √(Re² + Im² + mag_eps) (amplitude) in place of the power.
harmonic_source       tanh(w·(sin(φ_k)·amp·uv + noise_amp·noise) + b) [B, T, 1] from a sample-rate F0 curve;
                      φ_k the phase of harmonic k, integrated at the frame rate (T/U) with the reference's linear
                      interpolations (see harmonic_source_oracle).

Kernel forms:
- Small transforms (n_fft <= DIRECT_MAX_NFFT, Kokoro's n_fft 20 / hop 5 / 11 bins): a direct DFT in registers.
  The inverse is one pass. Rows form (_istft_rows_kernel): a thread takes F >= overlap − 1 consecutive frames and
  owns their F·hop output samples, so the overlap-add stays in its registers except for the taps that fall past
  its last frame, summed and moved one thread down by a warp shuffle (15 values per thread for n_fft 20 / hop 5);
  the DFT coefficients are compile-time constants (FMA immediates: no table loads or registers), the inverse real
  DFT takes even- and odd-bin partial sums of a quarter of the tap pairs (pair n_fft/2 − m reuses pair m's with
  signs: ~5 FMAs per tap instead of ~9), and programs away from the signal's ends run without masks and with a
  constant window envelope. Frame-vector form (_istft_ola_kernel, for overlaps too long for a thread's registers):
  a program takes a run of frames as vectors, evaluates the taps with FMAs on scalar coefficients loaded from
  tables, and moves tap u + r·hop of frame t − r onto row t by tl.gather (through shared memory).
- Power-of-two n_fft >= 1024 (speech: 1024 / hop 256): a four-step FFT, n_fft = N1·N2 (32·32), on tensor cores or
  FMAs (_fft_tile): a DFT-N1 GEMM over a tile of frames, twiddles, a per-frame transpose, a DFT-N2 GEMM for the
  first N2/2 outputs plus the Nyquist bin as a reduction. Per frame 2·n_fft·(N1 + N2) real MACs (1024: 131k)
  against 2·n_fft·(n_fft/2 + 1) = 1.05M for a direct DFT. Roofline at 1024/256, float32, [16, 480000]: 7.9 GFLOP
  and 153 MB (polar out): ~155 µs of FMA work with "ieee" (51 TFLOP/s measured), ~60 µs of tensor-core work with
  "tf32x3" (3 MMAs per product, 405 TFLOP/s tf32), 36 µs of memory: compute-bound, not a copy-bandwidth kernel.
  A log-mel adds only 2·F·n_mels MACs per frame (100 mels: 0.1M) and the float32 spectrum's round trip (2·4·F B per
  frame) to that. Measured (H200, large shapes, float32): stft 440 µs "ieee" / 358 µs "tf32x3" against cuFFT's
  197 µs, istft 399 / 319 µs against 606 µs, mel 714 / 752 µs against 524 µs; 16-bit data (tf32): 244, 208 and
  240 µs against 223, 766 and 548 µs. The four-step kernels are latency-bound (few frames per program, several
  dependent tl.dot and layout steps), not at either roofline; at the 10 s model shapes they beat torch 2-5x. The inverse writes windowed frames to a float32 scratch [B, T, n_fft] that a gather kernel overlap-adds;
  the mel variant writes the float32 power (or magnitude) spectrum [B, T, F] and a filterbank GEMM takes the log.
- Other sizes: a DFT as a GEMM, frames gathered from the signal (reflect padding folded into the gather) times a
  precomputed window·cos / −window·sin basis with tl.dot; the mel variant multiplies each bin tile into the
  filterbank inside the same program; the inverse computes windowed frames against the inverse basis into a
  float32 scratch, then overlap-adds them in a second gather kernel.
- Harmonic source: a frame-rate scan (one program per batch row) then one sample-rate pass.
The DFT runs on float32 operands whatever the storage dtype: phase is ill-conditioned near zero-magnitude bins,
and a 16-bit basis would move it. For float32 data tf32x3 and tf32 are opt-in (tilewave.precision.scope);
the FFT kernels give 16-bit data tf32 dots when "ieee" is asked for (see _fft_precision). The harmonic phase is
accumulated in float64: at 10 s the phase reaches ~10^6 rad, where a float32 phase is off by ~0.1 rad.
Launch invariants: inputs contiguous (the harmonic source's noise may be a transposed view: strides are passed),
reflect padding needs pad < N, the harmonic source needs T % upsample_scale == 0 (as the reference does).
"""
from __future__ import annotations

import functools
import math
import os

import numpy as np
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import rand, randn, tanh
from tilewave.precision import MODES, check as check_precision

DIRECT_MAX_NFFT = 64
DIRECT_BLOCK_T = 128
# Tiles sized so that no variant spills on sm_90 (the AOT gate checks ptxas's report); 8 warps each.
STFT_TILE = (64, 64, 32)          # frames, bins, taps per step
ISTFT_FRAMES_TILE = (64, 64, 16)  # frames, taps, bins per step
# The fused mel keeps every bin of a frame tile in one program. At batch 1 (10 s = 938 frames) 64-frame tiles
# give 15 programs for 132 SMs, so inputs with fewer than MEL_WIDE_PROGRAMS wide tiles take 16-frame tiles.
MEL_TILES = ((16, 64), (64, 32))  # (frames, bins per step)
MEL_BLOCK_K, MEL_BLOCK_M, MEL_WIDE_PROGRAMS = 32, 128, 264
OLA_BLOCK_S = 256
# Small inverse transform (n_fft <= DIRECT_MAX_NFFT): frames per program, warps, how the overlap-add leaves (0 one
# strided store per tap-row, 1 contiguous chunks of at most ISTFT_OLA_CHUNK samples assembled by gathers, 2 joined
# [frames, hop] tiles). H200 rounds 1-1c: mode 1 at 256 frames / 4 warps, one chunk, streamed the large shapes at
# ~50% of copy bandwidth (mode 2: 43%, mode 0: 39-44%; 128 or 512 frames, 2 or 8 warps, 256-sample chunks: slower).
ISTFT_OLA_FRAMES, ISTFT_OLA_WARPS, ISTFT_OLA_MODE, ISTFT_OLA_CHUNK = 256, 4, 1, 4096
# The rows form of the small inverse transform (_istft_rows_kernel): frames per thread (at least the overlap − 1),
# tile rows per program, warps, whether the phase gets a range reduction before the SFU, whether the inverse DFT
# splits even and odd bins (small_istft_constants). Used while a thread's taps (frames·n_fft) fit
# ISTFT_ROWS_MAX_TAPS (registers, and compile time: n_fft 34 / hop 4 = 8 frames x 34 taps took minutes for ptxas);
# else the frame-vector kernel above. H200 (session 3 round 2, time_cuda, float32 / bfloat16): the rows form at
# 4 / 32 / 1 warp / reduced / split against the frame vectors: istft_exp_sin [16, 22, 96001] 59.2 / 37.7 µs against
# 75.5 / 71.3 (65.5% of copy bandwidth in float32), istft [16, 11, 96001] 59.8 / 34.1 against 73.2 / 66.9, the 10 s
# [1, 22, 48001] 8.1 / 7.6 against 12.1 / 11.6. Measured alternatives (exp_sin float32, large / 10 s): 3 frames per
# thread 54.2 / 8.1 (71.5%; not measured for istft or 16-bit data), no range reduction 56.5 / 7.6 (error 5e-5 on
# phases of ~1500 rad, growing with |phase|), the direct DFT 57.4 / 8.0.
ISTFT_ROWS_FRAMES, ISTFT_ROWS_TILE, ISTFT_ROWS_WARPS, ISTFT_ROWS_REDUCE, ISTFT_ROWS_SPLIT = 4, 32, 1, True, True
ISTFT_ROWS_MAX_TAPS = 96
ISTFT_SMALL_KERNEL = "rows"  # "vectors": the frame-vector kernel for every small inverse transform
SCAN_BLOCK_L, SOURCE_BLOCK_T = 64, 128
GEMM_WARPS = 8
# four-step FFT kernels (n_fft a power of two >= 1024): (frames per program, warps) per dot precision
# H200, round 1c: ieee best at 2 frames / 4 warps, tf32x3 at 4 / 4 and 4 / 8 (within 2%; 8 warps leave the
# registers room for the tables), tf32 at 4 / 4 (8 frames: register-bound)
FFT_TILES = {"ieee": (2, 4), "tf32x3": (4, 8), "tf32": (4, 4)}
# filterbank GEMM tiles (frames, mel bands, bins per step, warps): narrow while wide tiles would leave SMs idle
MEL_PROJECT_TILES = ((16, 128, 16, 4), (64, 128, 32, 8))
# The interpreter runs one program at a time and pays per tl op, not per element: wide tiles there keep the
# n_fft 1024 tests to seconds. The GPU tiles above are the ones the AOT variants compile.
if os.environ.get("TRITON_INTERPRET") == "1":
    STFT_TILE, ISTFT_FRAMES_TILE = (64, 256, 256), (64, 256, 256)
    MEL_TILES, MEL_BLOCK_K = ((16, 256), (64, 256)), 256
    MEL_PROJECT_TILES = ((16, 128, 256, 4), (64, 128, 256, 4))
    FFT_TILES = {p: (16, 4) for p in FFT_TILES}


# ---------------------------------------------------------------------------------------------------
# device helpers
# ---------------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
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


@triton.jit
def _fft_tile(x_row, f1c_ptr, f1s_ptr, twc_ptr, tws_ptr, f2c_ptr, f2s_ptr, win_ptr, t0, N, T, hop, pad,
              PRECISION: tl.constexpr, N1: tl.constexpr, N2: tl.constexpr, BT: tl.constexpr):
    # Four-step FFT of BT windowed frames, n_fft = N1·N2, n = N2·n1 + n2, bin k = k1 + N1·k2:
    #   A[(t, n2), k1] = Σ_n1 x_w[t, N2·n1 + n2]·W_N1^{n1·k1}      (tl.dot, rows (frame, n2))
    #   B = A·W_N^{n2·k1}                                          (twiddles, element-wise)
    #   X[(t, k1), k2] = Σ_n2 B[(t, k1), n2]·W_N2^{n2·k2}          (tl.dot after a per-frame transpose)
    # for k2 < N2/2 (bins 0 … n_fft/2 − 1); the Nyquist bin is Σ_n2 (−1)^n2·B[(t, 0), n2], returned as a
    # vector over the rows (t, k1) that is valid where k1 == 0. 2·n_fft·(N1 + N2) real MACs per frame against
    # 2·n_fft·(n_fft/2 + 1) for a direct DFT (1024: 131k vs 1.05M).
    r = tl.arange(0, BT * N2)
    n2 = r % N2
    t = t0 + r // N2
    n1 = tl.arange(0, N1)
    n = N2 * n1[None, :] + n2[:, None]
    q = _reflect(t[:, None] * hop + n - pad, N)
    xw = tl.load(x_row + q, mask=(t < T)[:, None], other=0.0).to(tl.float32) * tl.load(win_ptr + n)
    f1 = n1[:, None] * N1 + n1[None, :]
    a_re = tl.dot(xw, tl.load(f1c_ptr + f1), input_precision=PRECISION)
    a_im = tl.dot(xw, tl.load(f1s_ptr + f1), input_precision=PRECISION)
    tw = n2[:, None] * N1 + n1[None, :]
    twc = tl.load(twc_ptr + tw)
    tws = tl.load(tws_ptr + tw)
    b_re = a_re * twc - a_im * tws
    b_im = a_re * tws + a_im * twc
    b_re = tl.reshape(tl.permute(tl.reshape(b_re, (BT, N2, N1)), (0, 2, 1)), (BT * N1, N2))
    b_im = tl.reshape(tl.permute(tl.reshape(b_im, (BT, N2, N1)), (0, 2, 1)), (BT * N1, N2))
    m2 = tl.arange(0, N2)
    k2 = tl.arange(0, N2 // 2)
    f2 = m2[:, None] * (N2 // 2) + k2[None, :]
    f2c = tl.load(f2c_ptr + f2)
    f2s = tl.load(f2s_ptr + f2)
    x_re = tl.dot(b_re, f2c, input_precision=PRECISION)
    x_re = tl.dot(-b_im, f2s, x_re, input_precision=PRECISION)
    x_im = tl.dot(b_re, f2s, input_precision=PRECISION)
    x_im = tl.dot(b_im, f2c, x_im, input_precision=PRECISION)
    nyquist = tl.sum(b_re * (1 - 2 * (m2 % 2)).to(tl.float32)[None, :], axis=1)
    return x_re, x_im, nyquist


@triton.jit
def _stft_fft_kernel(x_ptr, f1c_ptr, f1s_ptr, twc_ptr, tws_ptr, f2c_ptr, f2s_ptr, win_ptr, a_ptr, c_ptr,
                     N, T, hop, pad, mag_eps, POLAR: tl.constexpr, POWER: tl.constexpr, MAGNITUDE: tl.constexpr,
                     PRECISION: tl.constexpr, N1: tl.constexpr, N2: tl.constexpr, BT: tl.constexpr):
    # grid: (B, cdiv(T, BT)); see _fft_tile. Outputs [B, F, T] as _stft_gemm_kernel; with POWER, one float32
    # spectrum S [B, T, F] (rows of bins, what the filterbank GEMM reads) = Re² + Im², or √(Re² + Im² + mag_eps)
    # with MAGNITUDE.
    NF: tl.constexpr = N1 * N2 // 2 + 1
    b = tl.program_id(0).to(tl.int64)
    t0 = tl.program_id(1) * BT
    x_re, x_im, nyquist = _fft_tile(x_ptr + b * N, f1c_ptr, f1s_ptr, twc_ptr, tws_ptr, f2c_ptr, f2s_ptr, win_ptr,
                                    t0, N, T, hop, pad, PRECISION, N1, N2, BT)
    r = tl.arange(0, BT * N1)
    k1 = r % N1
    t = t0 + r // N1
    k2 = tl.arange(0, N2 // 2)
    if POWER:
        spec = x_re * x_re + x_im * x_im
        nyq = nyquist * nyquist
        if MAGNITUDE:
            spec = tl.sqrt(spec + mag_eps)
            nyq = tl.sqrt(nyq + mag_eps)
        rows = (b * T + t) * NF
        tl.store(a_ptr + rows[:, None] + k1[:, None] + N1 * k2[None, :], spec, mask=(t < T)[:, None])
        tl.store(a_ptr + rows + NF - 1, nyq, mask=(t < T) & (k1 == 0))
    else:
        # [B, F, T] has frames contiguous: store [k1, k2, frame] tiles so that neighbouring lanes hold neighbouring
        # frames (the FFT's (frame, k1) rows scatter every element to its own sector: 1.6x slower on the H200)
        kk1 = tl.arange(0, N1)
        tt = t0 + tl.arange(0, BT)
        offs = (b * NF + kk1[:, None, None] + N1 * k2[None, :, None]) * T + tt[None, None, :]
        _store_spectrum(a_ptr, c_ptr, offs, (tt < T)[None, None, :],
                        tl.permute(tl.reshape(x_re, (BT, N1, N2 // 2)), (1, 2, 0)),
                        tl.permute(tl.reshape(x_im, (BT, N1, N2 // 2)), (1, 2, 0)), POLAR)
        _store_spectrum(a_ptr, c_ptr, (b * NF + NF - 1) * T + t, (t < T) & (k1 == 0), nyquist,
                        tl.zeros_like(nyquist), POLAR)


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
def _polar_to_cartesian(a_ptr, c_ptr, offs, mask, EXP_SIN: tl.constexpr, FAST: tl.constexpr):
    mag = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    ph = tl.load(c_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if EXP_SIN:
        mag = tl.where(mask, tl.exp(mag), 0.0)
        ph, _ = _sincos(ph, FAST)
    s, c = _sincos(ph, FAST)
    return mag * c, mag * s


@triton.jit
def _istft_fft_frames_kernel(a_ptr, c_ptr, g2c_ptr, g2s_ptr, twc_ptr, tws_ptr, g1c_ptr, g1s_ptr, win_ptr, frames_ptr,
                             T, batch_stride, EXP_SIN: tl.constexpr, FAST: tl.constexpr, PRECISION: tl.constexpr,
                             N1: tl.constexpr, N2: tl.constexpr, BT: tl.constexpr):
    # grid: (B, cdiv(T, BT)). Windowed time frames [B, T, n_fft] (float32 scratch) by the inverse four-step FFT,
    # n = N2·n1 + n2, k = k1 + N1·k2, Y = c_k·X/n_fft (the one-sided spectrum's doubling):
    #   C[(t, k1), n2] = Σ_{k2 < N2/2} Y[t, k1 + N1·k2]·W_N2^{−k2·n2};  D = C·W_N^{−k1·n2}
    #   x[(t, n2), n1] = Re Σ_k1 D[(t, n2), k1]·W_N1^{−k1·n1} + Re Y[t, n_fft/2]·(−1)^n2
    # (imaginary parts of DC and Nyquist drop out, as in irfft). a/c as in _istft_ola_kernel.
    NFFT: tl.constexpr = N1 * N2
    K2: tl.constexpr = N2 // 2
    b = tl.program_id(0).to(tl.int64)
    t0 = tl.program_id(1) * BT
    k2 = tl.arange(0, K2)
    # load [k1, k2, frame] tiles (frames are contiguous in [B, F, T]), then transpose to rows (frame, k1)
    kk1 = tl.arange(0, N1)
    tt = t0 + tl.arange(0, BT)
    k = kk1[:, None, None] + N1 * k2[None, :, None]
    y_re, y_im = _polar_to_cartesian(a_ptr, c_ptr, b * batch_stride + k * T + tt[None, None, :],
                                     (tt < T)[None, None, :], EXP_SIN, FAST)
    scale = tl.where(k == 0, 1.0 / NFFT, 2.0 / NFFT)
    y_re = tl.reshape(tl.permute(y_re * scale, (2, 0, 1)), (BT * N1, K2))
    y_im = tl.reshape(tl.permute(tl.where(k == 0, 0.0, y_im * scale), (2, 0, 1)), (BT * N1, K2))
    m2 = tl.arange(0, N2)
    g2 = k2[:, None] * N2 + m2[None, :]
    g2c = tl.load(g2c_ptr + g2)
    g2s = tl.load(g2s_ptr + g2)
    c_re = tl.dot(y_re, g2c, input_precision=PRECISION)
    c_re = tl.dot(-y_im, g2s, c_re, input_precision=PRECISION)
    c_im = tl.dot(y_re, g2s, input_precision=PRECISION)
    c_im = tl.dot(y_im, g2c, c_im, input_precision=PRECISION)
    tw = (tl.arange(0, BT * N1) % N1)[:, None] * N2 + m2[None, :]  # rows (frame, k1)
    twc = tl.load(twc_ptr + tw)
    tws = tl.load(tws_ptr + tw)
    d_re = c_re * twc - c_im * tws
    d_im = c_re * tws + c_im * twc
    d_re = tl.reshape(tl.permute(tl.reshape(d_re, (BT, N1, N2)), (0, 2, 1)), (BT * N2, N1))
    d_im = tl.reshape(tl.permute(tl.reshape(d_im, (BT, N1, N2)), (0, 2, 1)), (BT * N2, N1))
    n1 = tl.arange(0, N1)
    g1 = n1[:, None] * N1 + n1[None, :]
    x = tl.dot(d_re, tl.load(g1c_ptr + g1), input_precision=PRECISION)
    x = tl.dot(-d_im, tl.load(g1s_ptr + g1), x, input_precision=PRECISION)
    rows = tl.arange(0, BT * N2)
    n2 = rows % N2
    tr = t0 + rows // N2
    nyq, _ = _polar_to_cartesian(a_ptr, c_ptr, b * batch_stride + (NFFT // 2) * T + tr, tr < T, EXP_SIN, FAST)
    x += (nyq * (1.0 - 2.0 * (n2 % 2).to(tl.float32)) / NFFT)[:, None]
    n = N2 * n1[None, :] + n2[:, None]
    x = x * tl.load(win_ptr + n)
    tl.store(frames_ptr + (b * T + tr[:, None]) * NFFT + n, x, mask=(tr < T)[:, None])


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


@triton.jit
def _istft_ola_kernel(a_ptr, c_ptr, even_ptr, odd_ptr, win_ptr, wsq_ptr, y_ptr, T, L_out, batch_stride,
                      N_FFT: tl.constexpr, HOP: tl.constexpr, NF: tl.constexpr, EXP_SIN: tl.constexpr,
                      FAST: tl.constexpr, MODE: tl.constexpr, BT: tl.constexpr, S_P: tl.constexpr):
    # grid: (B, cdiv(cdiv(L_out + N_FFT//2, HOP), BT − OV + 1)), OV = ceil(N_FFT/HOP). Small transforms, one pass:
    # a program owns RQ = BT − OV + 1 hop-rows q (output positions p = q·HOP + u, u < HOP, sample j = p − N_FFT//2)
    # and evaluates the BT frames t = q0 − OV + 1 … q0 + RQ − 1 that cover them (OV − 1 halo frames recomputed).
    # Every tensor is a vector over those frames: each (frame, bin) is loaded and turned into (Re, Im) once, the
    # taps come from unrolled FMAs with scalar coefficients (no padding of bins or taps), and the overlap-add
    # shifts tap u + r·HOP of frame t − r onto row t with tl.gather (on-chip), so nothing is serialised.
    # Taps n and N − n share their cosine and sine sums (even/odd halves of the real inverse DFT):
    # z[n] = w[n]·(E[n] + O[n]), z[N − n] = w[N − n]·(E[n] − O[n]), E = Σ_k Re_k·even[n, k], O = Σ_k Im_k·odd[n, k].
    OV: tl.constexpr = (N_FFT + HOP - 1) // HOP
    RQ: tl.constexpr = BT - OV + 1
    HALF: tl.constexpr = N_FFT // 2
    b = tl.program_id(0).to(tl.int64)
    q0 = tl.program_id(1) * RQ
    i = tl.arange(0, BT)
    t = q0 - (OV - 1) + i
    tmask = (t >= 0) & (t < T)
    re = ()
    im = ()
    for k in tl.static_range(NF):
        offs = b * batch_stride + k * T + t
        mag = tl.load(a_ptr + offs, mask=tmask, other=0.0).to(tl.float32)
        ph = tl.load(c_ptr + offs, mask=tmask, other=0.0).to(tl.float32)
        if EXP_SIN:
            mag = tl.where(tmask, tl.exp(mag), 0.0)
            ph, _ = _sincos(ph, FAST)
        s, c = _sincos(ph, FAST)
        re = re + (mag * c,)
        im = im + (mag * s,)
    lo = ()  # taps 0 … N//2
    hi = ()  # taps N − 1 … N//2 + 1 (hi[n − 1] = tap N − n)
    for n in tl.static_range(HALF + 1):
        e = tl.zeros((BT,), dtype=tl.float32)
        o = tl.zeros((BT,), dtype=tl.float32)
        for k in tl.static_range(NF):
            e += re[k] * tl.load(even_ptr + n * NF + k)
            if (2 * k * n) % N_FFT != 0:  # sin(2πkn/N) = 0 there
                o += im[k] * tl.load(odd_ptr + n * NF + k)
        lo = lo + ((e + o) * tl.load(win_ptr + n),)
        if n > 0 and 2 * n < N_FFT:
            hi = hi + ((e - o) * tl.load(win_ptr + N_FFT - n),)
    if MODE == 2:
        _ola_joined(lo, hi, i, t, T, L_out, wsq_ptr, y_ptr + b * L_out, N_FFT, HOP, BT)
    else:
        rows = ()
        for u in tl.static_range(HOP):
            acc = tl.zeros((BT,), dtype=tl.float32)
            wsum = tl.zeros((BT,), dtype=tl.float32)
            for r in tl.static_range(OV):
                if u + r * HOP < N_FFT:
                    z = _tap(lo, hi, u + r * HOP, N_FFT)
                    if r > 0:
                        z = tl.gather(z, tl.maximum(i - r, 0), 0)
                    acc += z
                    wsum += tl.where((t - r >= 0) & (t - r < T), tl.load(wsq_ptr + u + r * HOP), 0.0)
            # rows past the ends of the signal have an empty envelope (torch rejects a zero envelope inside)
            val = acc / tl.where(wsum > 0.0, wsum, 1.0)
            if MODE == 1:
                rows = rows + (val,)
            else:
                j = t * HOP + u - HALF
                tl.store(y_ptr + b * L_out + j, val.to(y_ptr.dtype.element_ty),
                         mask=(i >= OV - 1) & (j >= 0) & (j < L_out))
        if MODE == 1:
            # contiguous stores of S_P samples each: sample s of the tile is row s // HOP + OV − 1, tap-row
            # u = s % HOP (chunks keep the gathers to the RQ·HOP samples that exist)
            for c0 in tl.static_range(0, RQ * HOP, S_P):
                s_ = c0 + tl.arange(0, S_P)
                row = tl.minimum(s_ // HOP + (OV - 1), BT - 1)
                uu = s_ % HOP
                y = tl.zeros((S_P,), dtype=tl.float32)
                for u in tl.static_range(HOP):
                    y = tl.where(uu == u, tl.gather(rows[u], row, 0), y)
                j = q0 * HOP + s_ - HALF
                tl.store(y_ptr + b * L_out + j, y.to(y_ptr.dtype.element_ty),
                         mask=(s_ < RQ * HOP) & (j >= 0) & (j < L_out))


@triton.jit
def _tap(lo, hi, n: tl.constexpr, N_FFT: tl.constexpr):
    if n <= N_FFT // 2:
        z = lo[n]
    else:
        z = hi[N_FFT - n - 1]
    return z


@triton.jit
def _ola_joined(lo, hi, i, t, T, L_out, wsq_ptr, y_row, N_FFT: tl.constexpr, HOP: tl.constexpr, BT: tl.constexpr):
    # The overlap-add on [BT, HOP_P] tiles: for each shift r the HOP taps u + r·HOP are joined (in registers) into
    # one tile, moved down r rows by a single tl.gather, and the sum leaves through one 2-D store of contiguous rows.
    # tl.join appends the new axis last, so after log2(HOP_P) pairwise joins column c holds tap-row bitreverse(c).
    OV: tl.constexpr = (N_FFT + HOP - 1) // HOP
    LOG: tl.constexpr = (HOP - 1).bit_length()
    HOP_P: tl.constexpr = 1 << LOG
    col = tl.arange(0, HOP_P)
    u = tl.zeros((HOP_P,), dtype=tl.int32)
    for bit in tl.static_range(LOG):
        u += ((col >> bit) & 1) << (LOG - 1 - bit)
    acc = tl.zeros((BT, HOP_P), dtype=tl.float32)
    wsum = tl.zeros((BT, HOP_P), dtype=tl.float32)
    for r in tl.static_range(OV):
        level = ()
        for v in tl.static_range(HOP_P):
            if v < HOP and v + r * HOP < N_FFT:
                level = level + (_tap(lo, hi, v + r * HOP, N_FFT),)
            else:
                level = level + (tl.zeros((BT,), dtype=tl.float32),)
        for _ in tl.static_range(LOG):
            joined = ()
            for p in tl.static_range(len(level) // 2):
                joined = joined + (tl.join(level[2 * p], level[2 * p + 1]),)
            level = joined
        z = tl.reshape(level[0], (BT, HOP_P))
        if r > 0:
            z = tl.gather(z, tl.broadcast_to(tl.maximum(i - r, 0)[:, None], (BT, HOP_P)), 0)
        acc += z
        n = u + r * HOP
        w2 = tl.load(wsq_ptr + n, mask=(u < HOP) & (n < N_FFT), other=0.0)
        wsum += tl.where(((t - r >= 0) & (t - r < T))[:, None], w2[None, :], 0.0)
    val = acc / tl.where(wsum > 0.0, wsum, 1.0)
    j = t[:, None] * HOP + u[None, :] - N_FFT // 2
    tl.store(y_row + j, val.to(y_row.dtype.element_ty),
             mask=(i >= OV - 1)[:, None] & (u < HOP)[None, :] & (j >= 0) & (j < L_out))


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


@triton.jit
def _frame_taps(a_row, c_row, mask, T, N_FFT: tl.constexpr, EVEN: tl.constexpr, ODD: tl.constexpr,
                WIN: tl.constexpr, EXP_SIN: tl.constexpr, FAST: tl.constexpr, REDUCE: tl.constexpr,
                MASKED: tl.constexpr, SPLIT: tl.constexpr):
    # The N_FFT windowed taps of one frame per tile row (vectors over rows; a_row/c_row point at bin 0): (Re, Im)
    # of every bin, then the even/odd sums of the real inverse DFT with compile-time coefficients (zeros skipped;
    # EVEN/ODD carry the window when it is symmetric, WIN[n] == 1.0 then). MASKED: frames outside [0, T) are zero.
    NF: tl.constexpr = N_FFT // 2 + 1
    HALF: tl.constexpr = N_FFT // 2
    re = ()
    im = ()
    for k in tl.static_range(NF):
        if MASKED:
            # exp(-inf) = 0 zeroes the whole bin
            x = tl.load(a_row + k * T, mask=mask, other=float("-inf") if EXP_SIN else 0.0).to(tl.float32)
            ph = tl.load(c_row + k * T, mask=mask, other=0.0).to(tl.float32)
        else:
            x = tl.load(a_row + k * T).to(tl.float32)
            ph = tl.load(c_row + k * T).to(tl.float32)
        if EXP_SIN:
            mag = _exp_fast(x, FAST)
            if REDUCE:
                ph, _ = _sincos(ph, FAST)
            else:
                ph, _ = _sincos_unreduced(ph, FAST)
            s, c = _sincos_unreduced(ph, FAST)
        else:
            mag = x
            if REDUCE:
                s, c = _sincos(ph, FAST)
            else:
                s, c = _sincos_unreduced(ph, FAST)
        re = re + (mag * c,)
        im = im + (mag * s,)
    if SPLIT:
        # sums over the even and the odd bins apart: with θ = 2πkm/N, m' = N/2 − m turns cos θ into (−1)^k cos θ
        # and sin θ into −(−1)^k sin θ, so pair m' is (Ee − Eo, Oo − Oe) of pair m's partial sums (half the FMAs)
        ee = ()
        eo = ()
        oe = ()
        oo = ()
        for p in tl.static_range(HALF // 2 + 1):
            acc = (tl.zeros_like(re[0]), tl.zeros_like(re[0]), tl.zeros_like(re[0]), tl.zeros_like(re[0]))
            for k in tl.static_range(NF):
                if EVEN[p * NF + k] != 0.0:
                    acc = _add_at(acc, k % 2, re[k] * EVEN[p * NF + k])
                if ODD[p * NF + k] != 0.0:
                    acc = _add_at(acc, 2 + k % 2, im[k] * ODD[p * NF + k])
            ee = ee + (acc[0],)
            eo = eo + (acc[1],)
            oe = oe + (acc[2],)
            oo = oo + (acc[3],)
    taps = ()
    for n in tl.static_range(N_FFT):
        # tap n takes the sums of pair min(n, N − n) (constexpr names can't be rebound inside a static loop)
        if SPLIT:
            if min(n, N_FFT - n) <= HALF - min(n, N_FFT - n):
                e = ee[min(n, N_FFT - n)] + eo[min(n, N_FFT - n)]
                o = oe[min(n, N_FFT - n)] + oo[min(n, N_FFT - n)]
            else:
                e = ee[HALF - min(n, N_FFT - n)] - eo[HALF - min(n, N_FFT - n)]
                o = oo[HALF - min(n, N_FFT - n)] - oe[HALF - min(n, N_FFT - n)]
        else:
            e = tl.zeros_like(re[0])
            o = tl.zeros_like(re[0])
            for k in tl.static_range(NF):
                if EVEN[min(n, N_FFT - n) * NF + k] != 0.0:
                    e += re[k] * EVEN[min(n, N_FFT - n) * NF + k]
                if ODD[min(n, N_FFT - n) * NF + k] != 0.0:
                    o += im[k] * ODD[min(n, N_FFT - n) * NF + k]
        if n <= HALF:
            z = e + o
        else:
            z = e - o
        if WIN[n] == 0.0:
            z = tl.zeros_like(re[0])
        elif WIN[n] != 1.0:
            z = z * WIN[n]
        taps = taps + (z,)
    return taps


@triton.jit
def _add_at(acc, which: tl.constexpr, x):
    # acc with x added to element `which` (a tuple of 4)
    out = ()
    for q in tl.static_range(4):
        if q == which:
            out = out + (acc[q] + x,)
        else:
            out = out + (acc[q],)
    return out


@triton.jit
def _istft_rows_kernel(a_ptr, c_ptr, y_ptr, T, L_out, batch_stride, N_FFT: tl.constexpr, HOP: tl.constexpr,
                       EVEN: tl.constexpr, ODD: tl.constexpr, WIN: tl.constexpr, WSQ: tl.constexpr,
                       SPLIT: tl.constexpr, EXP_SIN: tl.constexpr, FAST: tl.constexpr, REDUCE: tl.constexpr,
                       F: tl.constexpr, R: tl.constexpr):
    # grid: (B, cdiv(rows, (R − 1)·F)), rows = hop-rows t = S0 … (L_out − 1 + N_FFT//2)//HOP, S0 = (N_FFT//2)//HOP;
    # hop-row t holds samples j = t·HOP + u − N_FFT//2, u < HOP. Small transforms, one pass, F >= OV − 1 consecutive
    # frames per thread: tile row i (a thread) takes frames t = tb + F·i + f, f < F, and owns their hop-rows, so
    # F·HOP contiguous samples. Tap u + r·HOP of frame t lands on hop-row t + r: within the row while f + r < F,
    # else it is carried to row i + 1 (the carries are summed first and moved down one row by tl.gather: one
    # value per thread and carry; a warp-local shuffle when R is one warp). Row 0 only feeds carries (its frames
    # are the previous program's last ones). Coefficients are compile-time constants (no table loads or registers).
    # Programs whose frames and samples all lie inside the signal (all but the first and last of a row) run
    # without masks, with a constant envelope.
    HALF: tl.constexpr = N_FFT // 2
    S0: tl.constexpr = HALF // HOP
    p = tl.program_id(1)
    tb = S0 - F + p * ((R - 1) * F)
    j0 = p * ((R - 1) * F * HOP) + (HOP * (S0 - F) - HALF)  # written so that its alignment is provable
    if (tb >= 0) & (tb + R * F <= T) & (j0 + F * HOP >= 0) & (j0 + R * F * HOP <= L_out):
        _istft_rows(a_ptr, c_ptr, y_ptr, tb, j0, T, L_out, batch_stride, N_FFT, HOP, EVEN, ODD, WIN, WSQ, SPLIT,
                    EXP_SIN, FAST, REDUCE, F, R, False)
    else:
        _istft_rows(a_ptr, c_ptr, y_ptr, tb, j0, T, L_out, batch_stride, N_FFT, HOP, EVEN, ODD, WIN, WSQ, SPLIT,
                    EXP_SIN, FAST, REDUCE, F, R, True)


@triton.jit
def _istft_rows(a_ptr, c_ptr, y_ptr, tb, j0, T, L_out, batch_stride, N_FFT: tl.constexpr, HOP: tl.constexpr,
                EVEN: tl.constexpr, ODD: tl.constexpr, WIN: tl.constexpr, WSQ: tl.constexpr, SPLIT: tl.constexpr,
                EXP_SIN: tl.constexpr, FAST: tl.constexpr, REDUCE: tl.constexpr, F: tl.constexpr, R: tl.constexpr,
                EDGE: tl.constexpr):
    OV: tl.constexpr = (N_FFT + HOP - 1) // HOP
    FH: tl.constexpr = F * HOP
    CP: tl.constexpr = triton.next_power_of_2(F * HOP)
    LOG: tl.constexpr = (CP - 1).bit_length()
    b = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, R)
    taps = ()  # taps[f·N_FFT + n]: tap n of frame column f
    for f in tl.static_range(F):
        t = tb + F * i + f
        taps = taps + _frame_taps(a_ptr + b * batch_stride + t, c_ptr + b * batch_stride + t, (t >= 0) & (t < T), T,
                                  N_FFT, EVEN, ODD, WIN, EXP_SIN, FAST, REDUCE, EDGE, SPLIT)
    # out[g·HOP + u] = Σ_r tap u + r·HOP of frame column g − r (this row) + the carry of the previous row: the
    # same sum over its frame columns F + g − r (r > g)
    out = ()
    for g in tl.static_range(F):
        for u in tl.static_range(HOP):
            acc = tl.zeros((R,), dtype=tl.float32)
            for r in tl.static_range(OV - 1, -1, -1):  # earlier frame columns first
                if r <= g and u + r * HOP < N_FFT:
                    acc += taps[(g - r) * N_FFT + u + r * HOP]
            if g < OV - 1:
                carry = tl.zeros((R,), dtype=tl.float32)
                for r in tl.static_range(OV - 1, -1, -1):
                    if r > g and u + r * HOP < N_FFT:
                        carry += taps[(F + g - r) * N_FFT + u + r * HOP]
                acc += tl.gather(carry, tl.maximum(i - 1, 0), 0)
            out = out + (acc,)
    vals = ()
    for c in tl.static_range(CP):
        # tl.join appends the new axis last: after LOG levels of pairwise joins column c holds leaf bitreverse(c)
        vals = vals + (_enveloped(out, _bit_reverse(c, LOG), tb + F * i, T, N_FFT, HOP, WSQ, FH, R, EDGE),)
    for _ in tl.static_range(LOG):
        joined = ()
        for q in tl.static_range(len(vals) // 2):
            joined = joined + (tl.join(vals[2 * q], vals[2 * q + 1]),)
        vals = joined
    col = tl.arange(0, CP)
    j = (j0 + FH * i)[:, None] + col[None, :]
    mask = (i >= 1)[:, None] & (col < FH)[None, :]
    if EDGE:
        mask = mask & (j >= 0) & (j < L_out)
    tl.store(y_ptr + b * L_out + j, tl.reshape(vals[0], (R, CP)).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _enveloped(out, s: tl.constexpr, t_row, T, N_FFT: tl.constexpr, HOP: tl.constexpr, WSQ: tl.constexpr,
               FH: tl.constexpr, R: tl.constexpr, EDGE: tl.constexpr):
    # sample s = g·HOP + u of each tile row (hop-row t_row + g) over the envelope Σ_r WSQ[u + r·HOP], the sum over
    # the frames t_row + g − r inside [0, T) when EDGE; zeros for the padding columns s >= FH
    if s >= FH:
        v = tl.zeros((R,), dtype=tl.float32)
    elif EDGE:
        wsum = tl.zeros((R,), dtype=tl.float32)
        for r in tl.static_range((N_FFT + HOP - 1) // HOP):
            if s % HOP + r * HOP < N_FFT:
                inside = (t_row + s // HOP - r >= 0) & (t_row + s // HOP - r < T)
                wsum += tl.where(inside, WSQ[s % HOP + r * HOP], 0.0)
        v = out[s] / tl.where(wsum > 0.0, wsum, 1.0)
    else:
        v = out[s] * (1.0 / _strided_sum(WSQ, s % HOP, HOP))
    return v


@triton.jit
def _istft_frames_kernel(a_ptr, c_ptr, icos_ptr, isin_ptr, frames_ptr, T, NF, batch_stride,
                         N_FFT: tl.constexpr, EXP_SIN: tl.constexpr, PRECISION: tl.constexpr,
                         BLOCK_T: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_F: tl.constexpr):
    # grid: (B, cdiv(T, BLOCK_T), cdiv(N_FFT, BLOCK_N)). Windowed time frames [B, T, N_FFT] (float32 scratch):
    # (Re, Im) [BLOCK_T, BLOCK_F] @ inverse basis [BLOCK_F, BLOCK_N]; a/c as in _istft_ola_kernel.
    b = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    n = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_T, BLOCK_N), dtype=tl.float32)
    for f0 in range(0, NF, BLOCK_F):
        f = f0 + tl.arange(0, BLOCK_F)
        m2 = (t[:, None] < T) & (f[None, :] < NF)
        offs = b * batch_stride + f[None, :] * T + t[:, None]
        mag = tl.load(a_ptr + offs, mask=m2, other=0.0).to(tl.float32)
        ph = tl.load(c_ptr + offs, mask=m2, other=0.0).to(tl.float32)
        if EXP_SIN:
            mag = tl.where(m2, tl.exp(mag), 0.0)
            ph = tl.sin(ph)
        bmask = (f[:, None] < NF) & (n[None, :] < N_FFT)
        boffs = n[None, :] * NF + f[:, None]
        ic = tl.load(icos_ptr + boffs, mask=bmask, other=0.0)
        isn = tl.load(isin_ptr + boffs, mask=bmask, other=0.0)
        acc = tl.dot(mag * tl.cos(ph), ic, acc, input_precision=PRECISION)
        acc = tl.dot(mag * tl.sin(ph), isn, acc, input_precision=PRECISION)
    tl.store(frames_ptr + (b * T + t[:, None]) * N_FFT + n[None, :], acc,
             mask=(t[:, None] < T) & (n[None, :] < N_FFT))


@triton.jit
def _overlap_add_kernel(frames_ptr, wsq_ptr, y_ptr, T, L_out, pad, hop,
                        N_FFT: tl.constexpr, OVERLAP: tl.constexpr, BLOCK_S: tl.constexpr):
    # grid: (B, cdiv(L_out, BLOCK_S)); output j at p = j + pad takes frames t = p//hop − r at taps p − t·hop.
    b = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    p = j + pad
    acc = tl.zeros((BLOCK_S,), dtype=tl.float32)
    wsq = tl.zeros((BLOCK_S,), dtype=tl.float32)
    for r in tl.static_range(OVERLAP):
        t = p // hop - r
        n = p - t * hop
        valid = (j < L_out) & (t >= 0) & (t < T) & (n < N_FFT)
        acc += tl.load(frames_ptr + (b * T + t) * N_FFT + n, mask=valid, other=0.0)
        wsq += tl.load(wsq_ptr + n, mask=valid, other=0.0)
    wsq = tl.where(wsq > 0.0, wsq, 1.0)
    tl.store(y_ptr + b * L_out + j, (acc / wsq).to(y_ptr.dtype.element_ty), mask=j < L_out)


@triton.jit
def _source_phase_scan_kernel(f0_ptr, rand_ptr, cyc_ptr, T, L, scale, sample_rate, K,
                              BLOCK_L: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (B,). cyc[b, i, k] = Σ_{m<=i} D[m, k] in cycles (float64), D = the per-sample phase increment
    # frac(f0·(k+1)/sr) (+ the random initial phase on sample 0) linearly resampled to frame i.
    b = tl.program_id(0).to(tl.int64)
    k = tl.arange(0, BLOCK_K)
    kmask = k < K
    harm = (k + 1).to(tl.float64)
    # scale (upsample factor) and sample_rate arrive as float32 scalars (exact for integers < 2^24).
    sr = tl.cast(sample_rate, tl.float64)
    ini = tl.load(rand_ptr + b * K + k, mask=kmask, other=0.0).to(tl.float64)
    carry = tl.zeros((BLOCK_K,), dtype=tl.float64)
    for l0 in range(0, L, BLOCK_L):
        i = l0 + tl.arange(0, BLOCK_L)
        lmask = i < L
        src = tl.maximum((i.to(tl.float64) + 0.5) * tl.cast(scale, tl.float64) - 0.5, 0.0)
        i0 = tl.floor(src).to(tl.int32)
        w1 = src - i0.to(tl.float64)
        i1 = tl.minimum(i0 + 1, T - 1)
        fa = tl.load(f0_ptr + b * T + i0, mask=lmask, other=0.0).to(tl.float64)
        fb = tl.load(f0_ptr + b * T + i1, mask=lmask, other=0.0).to(tl.float64)
        ra = fa[:, None] * harm[None, :] / sr
        rb = fb[:, None] * harm[None, :] / sr
        ra = ra - tl.floor(ra) + tl.where(i0[:, None] == 0, ini[None, :], 0.0)
        rb = rb - tl.floor(rb) + tl.where(i1[:, None] == 0, ini[None, :], 0.0)
        d = tl.where(lmask[:, None] & kmask[None, :], (1.0 - w1[:, None]) * ra + w1[:, None] * rb, 0.0)
        c = tl.cumsum(d, axis=0) + carry[None, :]
        tl.store(cyc_ptr + (b * L + i[:, None]) * BLOCK_K + k[None, :], c, mask=lmask[:, None])
        carry += tl.sum(d, axis=0)


@triton.jit
def _harmonic_source_kernel(f0_ptr, cyc_ptr, noise_ptr, w_ptr, bias_ptr, y_ptr, T, L, scale, K,
                            ns_b, ns_t, ns_k, sine_amp, noise_std, threshold,
                            BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (B, cdiv(T, BLOCK_T)). Phase (cycles) linearly interpolated from the frame rate, times U; only its
    # fractional part reaches the float32 sine.
    b = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    k = tl.arange(0, BLOCK_K)
    jmask = j < T
    kmask = k < K
    Uf = tl.cast(scale, tl.float64)
    src = tl.maximum((j.to(tl.float64) + 0.5) / Uf - 0.5, 0.0)
    i0 = tl.floor(src).to(tl.int32)
    w1 = src - i0.to(tl.float64)
    i1 = tl.minimum(i0 + 1, L - 1)
    m2 = jmask[:, None] & kmask[None, :]
    c0 = tl.load(cyc_ptr + (b * L + i0[:, None]) * BLOCK_K + k[None, :], mask=m2, other=0.0)
    c1 = tl.load(cyc_ptr + (b * L + i1[:, None]) * BLOCK_K + k[None, :], mask=m2, other=0.0)
    cyc = Uf * ((1.0 - w1[:, None]) * c0 + w1[:, None] * c1)
    frac = (cyc - tl.floor(cyc)).to(tl.float32)
    sines = tl.sin(6.283185307179586 * frac) * sine_amp
    f0 = tl.load(f0_ptr + b * T + j, mask=jmask, other=0.0).to(tl.float32)
    uv = (f0 > threshold).to(tl.float32)
    amp = uv * noise_std + (1.0 - uv) * (sine_amp / 3.0)
    noise = tl.load(noise_ptr + b * ns_b + j[:, None].to(tl.int64) * ns_t + k[None, :] * ns_k, mask=m2,
                    other=0.0).to(tl.float32)
    exc = sines * uv[:, None] + amp[:, None] * noise
    w = tl.load(w_ptr + k, mask=kmask, other=0.0).to(tl.float32)
    y = tl.sum(exc * w[None, :], axis=1) + tl.load(bias_ptr).to(tl.float32)
    tl.store(y_ptr + b * T + j, tanh(y).to(y_ptr.dtype.element_ty), mask=jmask)


# ---------------------------------------------------------------------------------------------------
# bases (float64 on the host, cached per size and device)
# ---------------------------------------------------------------------------------------------------
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


def fft_split(n_fft: int) -> tuple[int, int] | None:
    """(N1, N2) with N1·N2 = n_fft for the four-step FFT kernels, or None. N1 >= N2 >= 32: the inverse kernel's
    dot reduces over N2/2 bins, and tl.dot needs a reduction of at least 16 on the GPU (n_fft 256 = 16·16 failed
    to compile on the H200), so smaller sizes take the DFT-GEMM kernels."""
    if n_fft & (n_fft - 1) or n_fft < 1024:
        return None
    n2 = 1 << ((n_fft.bit_length() - 1) // 2)
    return n_fft // n2, n2


@functools.lru_cache(maxsize=32)
def _fft_tables(n_fft: int, win_length: int, device: str) -> dict[str, torch.Tensor]:
    """The four-step FFT's DFT-N1 matrix (cos, −sin) [N1, N1], twiddles W_N^{n2·k1} [N2, N1], DFT-N2 matrix for the
    first N2/2 outputs [N2, N2/2] and the window [n_fft]; angles reduced exactly in integers."""
    n1_, n2_ = fft_split(n_fft)

    def cs(a, b, m):
        ang = 2 * np.pi * ((a[:, None] * b[None, :]) % m) / m
        return np.cos(ang), -np.sin(ang)

    f1c, f1s = cs(np.arange(n1_), np.arange(n1_), n1_)
    twc, tws = cs(np.arange(n2_), np.arange(n1_), n_fft)
    f2c, f2s = cs(np.arange(n2_), np.arange(n2_ // 2), n2_)
    # inverse: W^{-m} = cos + i·sin, the conjugates (the sine tables negated and laid out for the other order)
    tables = {"f1c": f1c, "f1s": f1s, "twc": twc, "tws": tws, "f2c": f2c, "f2s": f2s,
              "g2c": f2c.T, "g2s": -f2s.T, "itwc": twc.T, "itws": -tws.T, "g1c": f1c, "g1s": -f1s,
              "win": padded_hann(n_fft, win_length)}
    return {k: torch.tensor(v, dtype=torch.float32, device=device).contiguous() for k, v in tables.items()}


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


@functools.lru_cache(maxsize=32)
def small_istft_constants(n_fft: int, win_length: int, split: bool = True) -> dict[str, tuple[float, ...] | bool]:
    """The small inverse transform's compile-time tables. EVEN, ODD [P·F] (as in _bases, P pairs of taps n, n_fft − n:
    all n_fft//2 + 1, or with `split` only the first n_fft//4 + 1, whose even- and odd-bin sums give the other pairs
    as well); pair p's rows carry the window s_p = w[p] when it is symmetric (w[n] = w[n_fft − n]) and nonzero,
    and WIN[n] = w[n] / s_p is what tap n is still multiplied by (1: nothing, 0: the tap is zero). WSQ = w² [n_fft].
    Zero coefficients are exact zeros."""
    b = _bases(n_fft, win_length, "cpu")
    w = padded_hann(n_fft, win_length)
    half = n_fft // 2
    sym = bool(np.array_equal(w[1:], w[1:][::-1]))
    scale = np.where(sym & (w != 0.0), w, 1.0)
    n = np.arange(n_fft)
    pair = np.minimum(n, n_fft - n)
    if split:
        pair = np.minimum(pair, half - pair)
    rows = half // 2 + 1 if split else half + 1
    even, odd = (b[k].double().numpy()[:rows] * scale[:rows, None] for k in ("even", "odd"))
    # cos(2πm/N) is zero where 4m = N or 3N; the float64 basis holds ~1e-17 there
    m = (np.arange(rows)[:, None] * np.arange(half + 1)[None, :]) % n_fft
    even = np.where((4 * m == n_fft) | (4 * m == 3 * n_fft), 0.0, even)
    return {"EVEN": tuple(float(v) for v in even.ravel()), "ODD": tuple(float(v) for v in odd.ravel()),
            "WIN": tuple(float(v) for v in w / scale[pair]), "WSQ": tuple(float(v) for v in w ** 2), "SPLIT": split}


# ---------------------------------------------------------------------------------------------------
# launchers (Triton path; tilewave.ops decides when to call them)
# ---------------------------------------------------------------------------------------------------
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
    since tf32's ~1e-3 relative error is far below what 16-bit storage resolves (H200: 1.8x faster than the FMA
    path at the large shapes, within the float16/bfloat16 tolerance rows)."""
    precision = check_precision(precision)
    return "tf32" if precision == "ieee" and dtype in (torch.float16, torch.bfloat16) else precision


def fft_config(precision: str) -> tuple[int, int]:
    """(frames per program, warps) of the four-step FFT kernels at a dot precision."""
    return FFT_TILES[precision]


def _stft_fft_launch(x, n_fft, hop, win_length, pad, T, a, c, *, polar, power, magnitude, mag_eps, precision):
    tb = _fft_tables(n_fft, win_length, str(x.device))
    n1, n2 = fft_split(n_fft)
    bt, warps = fft_config(precision)
    B, N = x.shape
    _stft_fft_kernel[(B, triton.cdiv(T, bt))](
        x, tb["f1c"], tb["f1s"], tb["twc"], tb["tws"], tb["f2c"], tb["f2s"], tb["win"], a, c, N, T, hop, pad,
        float(mag_eps), POLAR=polar, POWER=power, MAGNITUDE=magnitude, PRECISION=precision, N1=n1, N2=n2, BT=bt,
        num_warps=warps)


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


def istft_ola_config(n_fft: int, hop: int) -> tuple[int, int, int, int]:
    """(frames per program BT, warps, output mode, samples per output chunk) of the small inverse transform; every
    frame holds n_fft//2 + 1 (Re, Im) pairs and n_fft taps in registers, so BT per thread shrinks as n_fft grows."""
    bt = ISTFT_OLA_FRAMES if n_fft <= 32 else ISTFT_OLA_FRAMES // 2
    bt = max(bt, triton.next_power_of_2(2 * triton.cdiv(n_fft, hop)))
    chunk = min(ISTFT_OLA_CHUNK, triton.next_power_of_2((bt - triton.cdiv(n_fft, hop) + 1) * hop))
    return bt, ISTFT_OLA_WARPS, ISTFT_OLA_MODE, chunk


def istft_rows_config(n_fft: int, hop: int) -> tuple[int, int, int, bool, bool] | None:
    """(frames per thread F, tile rows R, warps, phase range reduction, even/odd split) of _istft_rows_kernel, or
    None where a thread's F·n_fft taps would pass ISTFT_ROWS_MAX_TAPS (long overlaps: the frame-vector kernel)."""
    f = max(ISTFT_ROWS_FRAMES, triton.cdiv(n_fft, hop) - 1)
    if f * n_fft > ISTFT_ROWS_MAX_TAPS:
        return None
    return f, ISTFT_ROWS_TILE, ISTFT_ROWS_WARPS, ISTFT_ROWS_REDUCE, ISTFT_ROWS_SPLIT


def istft_rows_launch(a, c, out, batch_stride, T, n_fft, hop, win_length, exp_sin, config):
    f, rows, warps, reduce, split = config
    B, L_out = out.shape
    s0 = (n_fft // 2) // hop
    hop_rows = (L_out - 1 + n_fft // 2) // hop - s0 + 1
    _istft_rows_kernel[(B, triton.cdiv(hop_rows, (rows - 1) * f))](
        a, c, out, T, L_out, batch_stride, N_FFT=n_fft, HOP=hop, **small_istft_constants(n_fft, win_length, split),
        EXP_SIN=exp_sin, FAST=a.is_cuda, REDUCE=reduce, F=f, R=rows, num_warps=warps)
    return out


def _istft_launch(a, c, batch_stride, B, NF, T, n_fft, hop, win_length, exp_sin, precision, out):
    if n_fft // 2 + 1 != NF:
        raise ValueError(f"istft: n_fft={n_fft} has {n_fft // 2 + 1} bins, the spectrum has {NF}")
    if hop < 1 or hop > n_fft:
        raise ValueError(f"istft: hop must be in [1, n_fft={n_fft}], got {hop}")
    pad = n_fft // 2
    L_out = hop * (T - 1) + n_fft - 2 * pad
    out = a.new_empty(B, L_out) if out is None else out
    basis = _bases(n_fft, win_length or n_fft, str(a.device))
    if not (B and L_out > 0):
        return out
    overlap = triton.cdiv(n_fft, hop)
    if n_fft <= DIRECT_MAX_NFFT and ISTFT_SMALL_KERNEL == "rows" and istft_rows_config(n_fft, hop):
        return istft_rows_launch(a, c, out, batch_stride, T, n_fft, hop, win_length or n_fft, exp_sin,
                                 istft_rows_config(n_fft, hop))
    if n_fft <= DIRECT_MAX_NFFT:
        bt, warps, mode, chunk = istft_ola_config(n_fft, hop)
        rows = triton.cdiv(L_out + pad, hop)
        _istft_ola_kernel[(B, triton.cdiv(rows, bt - overlap + 1))](
            a, c, basis["even"], basis["odd"], basis["win"], basis["wsq"], out, T, L_out, batch_stride,
            N_FFT=n_fft, HOP=hop, NF=NF, EXP_SIN=exp_sin, FAST=a.is_cuda, MODE=mode, BT=bt,
            S_P=chunk, num_warps=warps)
        return out
    if fft_split(n_fft):
        tb = _fft_tables(n_fft, win_length or n_fft, str(a.device))
        n1, n2 = fft_split(n_fft)
        prec = _fft_precision(precision, a.dtype)
        bt, warps = fft_config(prec)
        frames = torch.empty(B, T, n_fft, device=a.device, dtype=torch.float32)
        _istft_fft_frames_kernel[(B, triton.cdiv(T, bt))](
            a, c, tb["g2c"], tb["g2s"], tb["itwc"], tb["itws"], tb["g1c"], tb["g1s"], tb["win"], frames, T,
            batch_stride, EXP_SIN=exp_sin, FAST=a.is_cuda, PRECISION=prec, N1=n1, N2=n2, BT=bt, num_warps=warps)
    else:
        frames = torch.empty(B, T, n_fft, device=a.device, dtype=torch.float32)
        bt, bn, bf = ISTFT_FRAMES_TILE
        _istft_frames_kernel[(B, triton.cdiv(T, bt), triton.cdiv(n_fft, bn))](
            a, c, basis["icos"], basis["isin"], frames, T, NF, batch_stride, N_FFT=n_fft, EXP_SIN=exp_sin,
            PRECISION=check_precision(precision), BLOCK_T=bt, BLOCK_N=bn, BLOCK_F=bf, num_warps=GEMM_WARPS)
    _overlap_add_kernel[(B, triton.cdiv(L_out, OLA_BLOCK_S))](
        frames, basis["wsq"], out, T, L_out, pad, hop, N_FFT=n_fft, OVERLAP=overlap, BLOCK_S=OLA_BLOCK_S,
        num_warps=4)
    return out


def istft(magnitude: torch.Tensor, phase: torch.Tensor, n_fft: int, hop: int, win_length: int | None = None,
          precision: str = "ieee", out: torch.Tensor | None = None) -> torch.Tensor:
    """(magnitude, phase) [B, F, T] -> y [B, hop·(T−1) + n_fft − 2·(n_fft//2)] (torch.istft, center=True)."""
    _check_contiguous("istft", magnitude=magnitude, phase=phase)
    if magnitude.shape != phase.shape or magnitude.dim() != 3:
        raise ValueError(f"istft: magnitude and phase must both be [B, F, T], got {tuple(magnitude.shape)} "
                         f"and {tuple(phase.shape)}")
    B, NF, T = magnitude.shape
    return _istft_launch(magnitude, phase, NF * T, B, NF, T, n_fft, hop, win_length, False, precision, out)


def istft_exp_sin(x: torch.Tensor, n_fft: int, hop: int, precision: str = "ieee",
                  out: torch.Tensor | None = None) -> torch.Tensor:
    """x [B, 2F, T] -> istft(exp(x[:, :F]), sin(x[:, F:])) [B, hop·(T−1) + n_fft − 2·(n_fft//2)]."""
    _check_contiguous("istft_exp_sin", x=x)
    NF = n_fft // 2 + 1
    if x.dim() != 3 or x.shape[1] != 2 * NF:
        raise ValueError(f"istft_exp_sin: x must be [B, 2·(n_fft//2 + 1) = {2 * NF}, T], got {tuple(x.shape)}")
    B, _, T = x.shape
    return _istft_launch(x, x[:, NF:], 2 * NF * T, B, NF, T, n_fft, hop, None, True, precision, out)


def harmonic_source(f0: torch.Tensor, merge_weight: torch.Tensor, merge_bias: torch.Tensor, rand_ini: torch.Tensor,
                    noise: torch.Tensor, *, sample_rate: int, upsample_scale: int, sine_amp: float = 0.1,
                    noise_std: float = 0.003, voiced_threshold: float = 10.0, out: torch.Tensor | None = None):
    """f0 [B, T, 1] (Hz), merge_weight [1, K], merge_bias [1], rand_ini [B, K], noise [B, T, K] -> [B, T, 1]."""
    _check_contiguous("harmonic_source", f0=f0, rand_ini=rand_ini)
    B, T = f0.shape[0], f0.shape[1]
    K = merge_weight.shape[-1]
    U = int(upsample_scale)
    if U < 1 or T % U:
        raise ValueError(f"harmonic_source: the length ({T}) must be a multiple of upsample_scale ({U}), as the "
                         f"reference's frame-rate phase requires")
    if tuple(rand_ini.shape) != (B, K) or tuple(noise.shape) != (B, T, K):
        raise ValueError(f"harmonic_source: expected rand_ini [{B}, {K}] and noise [{B}, {T}, {K}], got "
                         f"{tuple(rand_ini.shape)} and {tuple(noise.shape)}")
    L = T // U
    BLOCK_K = triton.next_power_of_2(K)
    out = f0.new_empty(B, T, 1) if out is None else out
    if B and T:
        cyc = torch.empty(B, L, BLOCK_K, device=f0.device, dtype=torch.float64)
        _source_phase_scan_kernel[(B,)](f0, rand_ini, cyc, T, L, float(U), float(sample_rate), K,
                                        BLOCK_L=SCAN_BLOCK_L, BLOCK_K=BLOCK_K, num_warps=4)
        _harmonic_source_kernel[(B, triton.cdiv(T, SOURCE_BLOCK_T))](
            f0, cyc, noise, merge_weight.contiguous(), merge_bias.contiguous(), out, T, L, float(U), K, *noise.stride(),
            float(sine_amp), float(noise_std), float(voiced_threshold), BLOCK_T=SOURCE_BLOCK_T, BLOCK_K=BLOCK_K,
            num_warps=4)
    return out


# ---------------------------------------------------------------------------------------------------
# float64 oracles (NumPy) and PyTorch peers
# ---------------------------------------------------------------------------------------------------
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


def istft_oracle(magnitude, phase, n_fft, hop, win_length=None, precision="ieee"):
    """Overlap-add of np.fft.irfft frames times the window, divided by the summed squared window, centre-trimmed."""
    spec = (magnitude.numpy() * np.exp(1j * phase.numpy())).transpose(0, 2, 1)  # [B, T, F]
    frames = np.fft.irfft(spec, n=n_fft, axis=-1) * padded_hann(n_fft, win_length or n_fft)
    B, T, _ = frames.shape
    total = n_fft + hop * (T - 1)
    y, wsum = np.zeros((B, total)), np.zeros(total)
    for t in range(T):
        y[:, t * hop:t * hop + n_fft] += frames[:, t]
        wsum[t * hop:t * hop + n_fft] += padded_hann(n_fft, win_length or n_fft) ** 2
    pad = n_fft // 2
    return torch.from_numpy(y[:, pad:total - pad] / wsum[pad:total - pad])


def istft_exp_sin_oracle(x, n_fft, hop, precision="ieee"):
    NF = n_fft // 2 + 1
    return istft_oracle(torch.exp(x[:, :NF]), torch.sin(x[:, NF:]), n_fft, hop)


def mel_oracle(x, mel_basis, n_fft, hop, win_length=None, pad=None, magnitude=False, mag_eps=1e-9, eps=1e-5,
               precision="ieee"):
    spec = _spectrum_oracle(x.numpy(), n_fft, hop, win_length or n_fft, n_fft // 2 if pad is None else pad)
    s = spec.real ** 2 + spec.imag ** 2
    if magnitude:
        s = np.sqrt(s + mag_eps)
    return torch.from_numpy(np.log(np.maximum(np.einsum("mf,bft->bmt", mel_basis.numpy(), s), eps)))


def _linear_resample(x: np.ndarray, scale: float, out_len: int) -> np.ndarray:
    """F.interpolate(mode='linear', align_corners=False) along the last axis: source (i + 0.5)·scale − 0.5,
    clamped below at 0; the right neighbour clamped to the last sample."""
    src = np.maximum((np.arange(out_len) + 0.5) * scale - 0.5, 0.0)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, x.shape[-1] - 1)
    w1 = src - i0
    return (1 - w1) * x[..., i0] + w1 * x[..., i1]


def harmonic_source_oracle(f0, merge_weight, merge_bias, rand_ini, noise, *, sample_rate, upsample_scale,
                           sine_amp=0.1, noise_std=0.003, voiced_threshold=10.0):
    """The reference SineGen + SourceModuleHnNSF, step by step, in float64."""
    f0, w, U = f0.numpy(), merge_weight.numpy(), upsample_scale
    T = f0.shape[1]
    rad = (f0 * np.arange(1, w.shape[-1] + 1) / sample_rate) % 1           # [B, T, K]
    rad[:, 0, :] += rand_ini.numpy()
    rad = _linear_resample(rad.transpose(0, 2, 1), U, T // U)               # [B, K, T/U]
    phase = np.cumsum(rad, axis=-1) * 2 * np.pi
    phase = _linear_resample(phase * U, 1 / U, T).transpose(0, 2, 1)        # [B, T, K]
    uv = (f0 > voiced_threshold).astype(np.float64)
    amp = uv * noise_std + (1 - uv) * sine_amp / 3
    excitation = np.sin(phase) * sine_amp * uv + amp * noise.numpy()
    return torch.from_numpy(np.tanh(excitation @ w.T + merge_bias.numpy()))


def _hann_t(n, like):
    return torch.hann_window(n, periodic=True, device=like.device, dtype=like.dtype)


def stft_torch(x, n_fft, hop, win_length=None, pad=None, polar=True):
    win_length = win_length or n_fft
    pad = n_fft // 2 if pad is None else pad
    xp = F.pad(x[:, None], (pad, pad), mode="reflect")[:, 0] if pad else x
    spec = torch.stft(xp, n_fft, hop, win_length, window=_hann_t(win_length, x), center=False, return_complex=True)
    return (spec.abs(), spec.angle()) if polar else (spec.real, spec.imag)


def istft_torch(magnitude, phase, n_fft, hop, win_length=None):
    win_length = win_length or n_fft
    return torch.istft(torch.polar(magnitude, phase), n_fft, hop, win_length, window=_hann_t(win_length, magnitude),
                       center=True)


def istft_exp_sin_torch(x, n_fft, hop):
    NF = n_fft // 2 + 1
    return istft_torch(torch.exp(x[:, :NF]), torch.sin(x[:, NF:]), n_fft, hop)


def mel_torch(x, mel_basis, n_fft, hop, win_length=None, pad=None, magnitude=False, mag_eps=1e-9, eps=1e-5):
    re, im = stft_torch(x, n_fft, hop, win_length, pad, polar=False)
    s = re ** 2 + im ** 2
    if magnitude:
        s = torch.sqrt(s + mag_eps)
    return torch.log(torch.clamp(torch.matmul(mel_basis, s), min=eps))


def harmonic_source_torch(f0, merge_weight, merge_bias, rand_ini, noise, *, sample_rate, upsample_scale,
                          sine_amp=0.1, noise_std=0.003, voiced_threshold=10.0):
    """The reference's operations in its order (float32 phase): bit-equal to Kokoro's SourceModuleHnNSF."""
    K = merge_weight.shape[-1]
    harmonics = torch.arange(1, K + 1, device=f0.device, dtype=f0.dtype)
    rad = (f0 * harmonics / sample_rate) % 1
    rad[:, 0, :] = rad[:, 0, :] + rand_ini
    rad = F.interpolate(rad.transpose(1, 2), scale_factor=1 / upsample_scale, mode="linear")
    phase = torch.cumsum(rad, dim=-1) * 2 * torch.pi
    phase = F.interpolate(phase * upsample_scale, scale_factor=upsample_scale, mode="linear")
    sines = torch.sin(phase).transpose(1, 2) * sine_amp
    uv = (f0 > voiced_threshold).to(f0.dtype)
    amp = uv * noise_std + (1 - uv) * sine_amp / 3
    excitation = sines * uv + amp * noise
    return torch.tanh(F.linear(excitation, merge_weight, merge_bias))


_F_SP = 200.0 / 3  # Slaney mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(f) -> np.ndarray:
    f = np.asarray(f, dtype=np.float64)
    return np.where(f >= _MIN_LOG_HZ, _MIN_LOG_MEL + np.log(np.maximum(f, 1e-12) / _MIN_LOG_HZ) / _LOGSTEP,
                    f / _F_SP)


def mel_to_hz(m) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return np.where(m >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)), _F_SP * m)


def slaney_mel_filterbank(sample_rate: int, n_fft: int, n_mels: int, fmin: float = 0.0,
                          fmax: float | None = None) -> np.ndarray:
    """librosa.filters.mel(htk=False, norm='slaney') [n_mels, n_fft//2 + 1] float64: triangles between
    Slaney-mel-spaced edges, each scaled by 2 / its width in Hz (constant energy per band)."""
    fmax = sample_rate / 2 if fmax is None else float(fmax)
    hz = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fft_hz = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    fdiff = np.diff(hz)
    ramps = hz[:, None] - fft_hz[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    return weights * (2.0 / (hz[2:n_mels + 2] - hz[:n_mels]))[:, None]


# ---------------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------------
_SR = 24000


def _signal(p, dtype, device, gen):
    return randn(p["shape"], dtype, device, gen)


def _stft_inputs(p, dtype, device, gen):
    return {"x": _signal(p, dtype, device, gen), "n_fft": p["n_fft"], "hop": p["hop"],
            "win_length": p.get("win_length"), "pad": p.get("pad"), "polar": False,
            "precision": p.get("precision", "ieee")}


def _stft_frames(p):
    pad = p["n_fft"] // 2 if p.get("pad") is None else p["pad"]
    return 1 + (p["shape"][-1] + 2 * pad - p["n_fft"]) // p["hop"]


def _spec_alloc(inputs):
    x = inputs["x"]
    T = 1 + (x.shape[-1] + 2 * (inputs["n_fft"] // 2 if inputs["pad"] is None else inputs["pad"]) - inputs["n_fft"]) \
        // inputs["hop"]
    return x.new_empty(x.shape[0], inputs["n_fft"] // 2 + 1, T), x.new_empty(x.shape[0], inputs["n_fft"] // 2 + 1, T)


def _transform_flops_per_frame(n_fft: int) -> float:
    """The arithmetic the kernel that runs does per frame: a direct DFT / GEMM takes 2 real MACs per tap per bin
    (cos and sin); the four-step FFT (power-of-two n_fft >= 1024) does n_fft/(2·(N1 + N2)) times less (1024: 8x).
    Declaring the DFT's count for the FFT would put the roofline above 100% of peak."""
    split = fft_split(n_fft)
    dft = 4.0 * n_fft * (n_fft // 2 + 1)
    return dft if split is None else dft * 2 * (split[0] + split[1]) / n_fft


def _dft_flops(p):
    return p["shape"][0] * _stft_frames(p) * _transform_flops_per_frame(p["n_fft"])


def _stft_bytes(p, itemsize):
    B, N = p["shape"]
    return itemsize * (B * N + 2 * B * (p["n_fft"] // 2 + 1) * _stft_frames(p))


FFT_NFFT = 1024  # the four-step FFT variants are declared at the speech size; the DFT GEMMs at a non-power of two
GEMM_NFFT = 1000


def _fft_table_sig(names):
    return {f"{n}_ptr": "*fp32" for n in names}


def _stft_fft_variants(dt: str, mode: str, prec: str) -> list[AotVariant]:
    """mode: 'polar' / 'cartesian' (the spectrum [B, F, T] in dt) or 'power' / 'magnitude' (float32 [B, T, F])."""
    out_dt = dt if mode in ("polar", "cartesian") else "fp32"
    bt, warps = FFT_TILES[prec]
    n1, n2 = fft_split(FFT_NFFT)
    return [AotVariant(
        f"_stft_fft_kernel[{dt},n_fft={FFT_NFFT},{mode},{prec}]", _stft_fft_kernel,
        {"x_ptr": f"*{dt}", **_fft_table_sig(("f1c", "f1s", "twc", "tws", "f2c", "f2s", "win")), "a_ptr": f"*{out_dt}",
         "c_ptr": f"*{out_dt}", "N": "i32", "T": "i32", "hop": "i32", "pad": "i32", "mag_eps": "fp32"},
        {"POLAR": mode == "polar", "POWER": mode in ("power", "magnitude"), "MAGNITUDE": mode == "magnitude",
         "PRECISION": prec, "N1": n1, "N2": n2, "BT": bt}, num_warps=warps, expect_mma=prec != "ieee")]


def _stft_variants():
    out = []
    for dt in ("fp32", "fp16", "bf16"):
        sig = {"x_ptr": f"*{dt}", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "mag_ptr": f"*{dt}", "phase_ptr": f"*{dt}",
               "N": "i32", "T": "i32", "hop": "i32", "pad": "i32"}
        for polar in (True, False):
            out.append(AotVariant(f"_stft_direct_kernel[{dt},n_fft=20,polar={polar}]", _stft_direct_kernel, sig,
                                  {"N_FFT": 20, "NF": 11, "POLAR": polar, "BLOCK_T": DIRECT_BLOCK_T, "BLOCK_F": 16}))
            for prec in MODES:
                out += _stft_fft_variants(dt, "polar" if polar else "cartesian", prec)
                out.append(AotVariant(
                    f"_stft_gemm_kernel[{dt},n_fft={GEMM_NFFT},polar={polar},{prec}]", _stft_gemm_kernel,
                    {**sig, "NF": "i32"},
                    {"N_FFT": GEMM_NFFT, "POLAR": polar, "PRECISION": prec, "BLOCK_T": STFT_TILE[0],
                     "BLOCK_F": STFT_TILE[1], "BLOCK_K": STFT_TILE[2]}, num_warps=GEMM_WARPS,
                    expect_mma=prec != "ieee"))
    return out


_STFT_CASES = [
    Case({"shape": (2, 97), "n_fft": 20, "hop": 5}),
    Case({"shape": (1, 1801), "n_fft": 1024, "hop": 256}),
    Case({"shape": (1, 1500), "n_fft": 1024, "hop": 256, "win_length": 800, "pad": 384}),
    Case({"shape": (3, 64), "n_fft": 16, "hop": 4, "win_length": 12}),
    Case({"shape": (1, 72000), "n_fft": 20, "hop": 5}, devices=("cuda",)),
    Case({"shape": (2, 120011), "n_fft": 1024, "hop": 256}, devices=("cuda",)),
    Case({"shape": (1, 24000), "n_fft": 1024, "hop": 256, "precision": "tf32"}, devices=("cuda",), dtypes=("float32",)),
    # tf32x3 is held to the float32 row: three tensor-core products per term, float32-class error
    Case({"shape": (2, 120011), "n_fft": 1024, "hop": 256, "precision": "tf32x3"}, devices=("cuda",),
         dtypes=("float32",)),
]

register(Kernel(
    name="stft", family="spectral",
    doc="X[b,k,t] = Σ_n w[n] x_reflect[b, t·hop + n − pad] e^{−2πikn/n_fft}; periodic Hann; registry checks (Re, Im)",
    make_inputs=_stft_inputs, alloc_out=_spec_alloc, launch=stft, oracle=stft_oracle, peer=stft_torch,
    cases=_STFT_CASES, tol_kind="reduction",
    bench=[BenchShape("Kokoro source STFT 10 s [1, 240000] n_fft 20 hop 5", {"shape": (1, 240000), "n_fft": 20,
                      "hop": 5}, flops=_dft_flops, bytes=_stft_bytes),
           BenchShape("speech STFT 10 s @24k [1, 240000] n_fft 1024 hop 256",
                      {"shape": (1, 240000), "n_fft": 1024, "hop": 256}, flops=_dft_flops, bytes=_stft_bytes),
           BenchShape("large [16, 480000] n_fft 1024 hop 256", {"shape": (16, 480000), "n_fft": 1024, "hop": 256},
                      flops=_dft_flops, bytes=_stft_bytes),
           BenchShape("large [16, 480000] n_fft 1024 hop 256, tf32x3 FFT", {"shape": (16, 480000), "n_fft": 1024,
                      "hop": 256, "precision": "tf32x3"}, flops=_dft_flops, bytes=_stft_bytes, dtypes=("float32",))],
    variants=_stft_variants,
))


def _istft_len(n_fft, hop, T):
    return hop * (T - 1) + n_fft - 2 * (n_fft // 2)


def _istft_inputs(p, dtype, device, gen):
    B, NF, T = p["shape"]
    n_fft = 2 * (NF - 1)
    return {"magnitude": rand(p["shape"], dtype, device, gen, 0.0, 2.0),
            "phase": rand(p["shape"], dtype, device, gen, -math.pi, math.pi), "n_fft": n_fft, "hop": p["hop"],
            "win_length": p.get("win_length"), "precision": p.get("precision", "ieee")}


def _istft_alloc(inputs):
    a = next(v for v in inputs.values() if isinstance(v, torch.Tensor))
    return a.new_empty(a.shape[0], _istft_len(inputs["n_fft"], inputs["hop"], a.shape[-1]))


def _istft_flops(p):
    # the inverse transform per frame (Re·cos, Im·sin per bin and tap, or the FFT's share of it)
    B, C, T = p["shape"]
    NF = C // 2 if p.get("exp_sin") else C
    return B * T * _transform_flops_per_frame(2 * (NF - 1))


def _istft_bytes(p, itemsize):
    B, C, T = p["shape"]
    NF = C // 2 if p.get("exp_sin") else C
    reads = B * C * T * (1 if p.get("exp_sin") else 2)
    return itemsize * (reads + B * _istft_len(2 * (NF - 1), p["hop"], T))


def _istft_variants(exp_sin: bool):
    out = []
    n1, n2 = fft_split(FFT_NFFT)
    for dt in ("fp32", "fp16", "bf16"):
        spec = {"a_ptr": f"*{dt}", "c_ptr": f"*{dt}"}
        bt, warps, mode, chunk = istft_ola_config(20, 5)
        out.append(AotVariant(f"_istft_ola_kernel[{dt},n_fft=20,hop=5,exp_sin={exp_sin}]", _istft_ola_kernel,
                              {**spec, **_fft_table_sig(("even", "odd", "win", "wsq")), "y_ptr": f"*{dt}",
                               "T": "i32", "L_out": "i32", "batch_stride": "i64"},
                              {"N_FFT": 20, "HOP": 5, "NF": 11, "EXP_SIN": exp_sin, "FAST": True, "MODE": mode,
                               "BT": bt, "S_P": chunk}, num_warps=warps))
        f, rows, warps, reduce, split = istft_rows_config(20, 5)
        out.append(AotVariant(f"_istft_rows_kernel[{dt},n_fft=20,hop=5,exp_sin={exp_sin}]", _istft_rows_kernel,
                              {**spec, "y_ptr": f"*{dt}", "T": "i32", "L_out": "i32", "batch_stride": "i64"},
                              {"N_FFT": 20, "HOP": 5, **small_istft_constants(20, 20, split), "EXP_SIN": exp_sin,
                               "FAST": True, "REDUCE": reduce, "F": f, "R": rows}, num_warps=warps))
        for prec in MODES:
            bt, warps = FFT_TILES[prec]
            out.append(AotVariant(f"_istft_fft_frames_kernel[{dt},n_fft={FFT_NFFT},exp_sin={exp_sin},{prec}]",
                                  _istft_fft_frames_kernel,
                                  {**spec, **_fft_table_sig(("g2c", "g2s", "twc", "tws", "g1c", "g1s", "win")),
                                   "frames_ptr": "*fp32", "T": "i32", "batch_stride": "i64"},
                                  {"EXP_SIN": exp_sin, "FAST": True, "PRECISION": prec, "N1": n1, "N2": n2, "BT": bt},
                                  num_warps=warps, expect_mma=prec != "ieee"))
            out.append(AotVariant(f"_istft_frames_kernel[{dt},n_fft={GEMM_NFFT},exp_sin={exp_sin},{prec}]",
                                  _istft_frames_kernel,
                                  {**spec, "icos_ptr": "*fp32", "isin_ptr": "*fp32", "frames_ptr": "*fp32",
                                   "T": "i32", "NF": "i32", "batch_stride": "i64"},
                                  {"N_FFT": GEMM_NFFT, "EXP_SIN": exp_sin, "PRECISION": prec,
                                   "BLOCK_T": ISTFT_FRAMES_TILE[0], "BLOCK_N": ISTFT_FRAMES_TILE[1],
                                   "BLOCK_F": ISTFT_FRAMES_TILE[2]}, num_warps=GEMM_WARPS,
                                  expect_mma=prec != "ieee"))
        out.append(AotVariant(f"_overlap_add_kernel[{dt},n_fft=1024]", _overlap_add_kernel,
                              {"frames_ptr": "*fp32", "wsq_ptr": "*fp32", "y_ptr": f"*{dt}", "T": "i32",
                               "L_out": "i32", "pad": "i32", "hop": "i32"},
                              {"N_FFT": 1024, "OVERLAP": 4, "BLOCK_S": OLA_BLOCK_S}))
    return out


register(Kernel(
    name="istft", family="spectral",
    doc="y = OLA_t(w · irfft(mag·e^{i·phase})) / OLA_t(w²), centre-trimmed (torch.istft, center=True)",
    make_inputs=_istft_inputs, alloc_out=_istft_alloc, launch=istft, oracle=istft_oracle, peer=istft_torch,
    cases=[Case({"shape": (2, 11, 23), "hop": 5}),
           Case({"shape": (1, 513, 5), "hop": 256}),
           Case({"shape": (1, 9, 13), "hop": 4, "win_length": 14}),
           Case({"shape": (2, 11, 48001), "hop": 5}, devices=("cuda",)),
           Case({"shape": (1, 513, 938), "hop": 256}, devices=("cuda",)),
           Case({"shape": (2, 513, 301), "hop": 256, "precision": "tf32"}, devices=("cuda",), dtypes=("float32",)),
           Case({"shape": (2, 513, 301), "hop": 256, "precision": "tf32x3"}, devices=("cuda",),
                dtypes=("float32",))],
    tol_kind="reduction",
    bench=[BenchShape("iSTFT 10 s [1, 11, 48001] n_fft 20 hop 5", {"shape": (1, 11, 48001), "hop": 5},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("iSTFT 10 s @24k [1, 513, 938] n_fft 1024 hop 256", {"shape": (1, 513, 938), "hop": 256},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 11, 96001] n_fft 20 hop 5", {"shape": (16, 11, 96001), "hop": 5},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 513, 1876] n_fft 1024 hop 256", {"shape": (16, 513, 1876), "hop": 256},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 513, 1876] n_fft 1024 hop 256, tf32x3 FFT", {"shape": (16, 513, 1876), "hop": 256,
                      "precision": "tf32x3"}, flops=_istft_flops, bytes=_istft_bytes, dtypes=("float32",))],
    variants=lambda: _istft_variants(False),
))


def _exp_sin_inputs(p, dtype, device, gen):
    B, C, T = p["shape"]
    # log-magnitudes around e^-1 (a trained generator's range) and pre-sine phases of a few radians.
    x = torch.cat([torch.randn(B, C // 2, T, generator=gen) - 1.0, torch.randn(B, C // 2, T, generator=gen) * 3.0], 1)
    return {"x": x.to(dtype).to(device), "n_fft": C - 2, "hop": p["hop"], "precision": p.get("precision", "ieee")}


register(Kernel(
    name="istft_exp_sin", family="spectral",
    doc="iSTFTNet generator tail: y = istft(exp(x[:, :F]), sin(x[:, F:])) in one gather kernel",
    make_inputs=_exp_sin_inputs, alloc_out=_istft_alloc, launch=istft_exp_sin, oracle=istft_exp_sin_oracle,
    peer=istft_exp_sin_torch,
    cases=[Case({"shape": (2, 22, 37), "hop": 5}),
           Case({"shape": (1, 18, 16), "hop": 4}),
           Case({"shape": (1, 22, 48001), "hop": 5}, devices=("cuda",)),
           Case({"shape": (3, 22, 9001), "hop": 5}, devices=("cuda",))],
    tol_kind="reduction",
    bench=[BenchShape("Kokoro generator tail 10 s [1, 22, 48001]", {"shape": (1, 22, 48001), "hop": 5,
                      "exp_sin": True}, flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 22, 96001]", {"shape": (16, 22, 96001), "hop": 5, "exp_sin": True},
                      flops=_istft_flops, bytes=_istft_bytes)],
    variants=lambda: _istft_variants(True),
))


def _mel_inputs(p, dtype, device, gen):
    NF = p["n_fft"] // 2 + 1
    if p.get("filterbank", "slaney") == "slaney":
        fb = torch.tensor(slaney_mel_filterbank(_SR, p["n_fft"], p["n_mels"]), dtype=torch.float32)
    else:
        fb = torch.rand(p["n_mels"], NF, generator=gen) * 0.05
    return {"x": _signal(p, dtype, device, gen) * 0.1, "mel_basis": fb.to(device), "n_fft": p["n_fft"],
            "hop": p["hop"], "win_length": p.get("win_length"), "pad": p.get("pad"), "magnitude": p["magnitude"],
            "mag_eps": 1e-9, "eps": 1e-5, "precision": p.get("precision", "ieee")}


def _mel_alloc(inputs):
    x = inputs["x"]
    p = {"shape": tuple(x.shape), "n_fft": inputs["n_fft"], "hop": inputs["hop"], "pad": inputs["pad"]}
    return x.new_empty(x.shape[0], inputs["mel_basis"].shape[0], _stft_frames(p))


def _mel_flops(p):
    return _dft_flops(p) + 2.0 * p["shape"][0] * _stft_frames(p) * p["n_mels"] * (p["n_fft"] // 2 + 1)


def _mel_bytes(p, itemsize):
    B, N = p["shape"]
    return itemsize * (B * N + B * p["n_mels"] * _stft_frames(p)) + 4 * p["n_mels"] * (p["n_fft"] // 2 + 1)


def _mel_variants(magnitude: bool):
    gemm = [AotVariant(f"_mel_kernel[{dt},n_fft={GEMM_NFFT},magnitude={magnitude},{prec},block_t={bt}]", _mel_kernel,
                       {"x_ptr": f"*{dt}", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "mel_ptr": "*fp32",
                        "out_ptr": f"*{dt}", "N": "i32", "T": "i32", "hop": "i32", "pad": "i32", "NF": "i32",
                        "NM": "i32", "mag_eps": "fp32", "log_eps": "fp32"},
                       {"N_FFT": GEMM_NFFT, "MAGNITUDE": magnitude, "PRECISION": prec, "BLOCK_T": bt, "BLOCK_F": bf,
                        "BLOCK_K": MEL_BLOCK_K, "BLOCK_M": MEL_BLOCK_M},
                       num_warps=GEMM_WARPS, expect_mma=prec != "ieee")
            for dt in ("fp32", "fp16", "bf16") for prec in MODES
            for bt, bf in (MEL_TILES[:1] if prec == "tf32x3" else MEL_TILES)]
    fft = [v for dt in ("fp32", "fp16", "bf16") for prec in MODES
           for v in _stft_fft_variants(dt, "magnitude" if magnitude else "power", prec)]
    project = [AotVariant(f"_mel_project_kernel[{dt},{prec},block_t={bt}]", _mel_project_kernel,
                          {"s_ptr": "*fp32", "mel_ptr": "*fp32", "out_ptr": f"*{dt}", "T": "i32", "NF": "i32",
                           "NM": "i32", "log_eps": "fp32"},
                          {"PRECISION": prec, "BLOCK_T": bt, "BLOCK_M": bm, "BLOCK_K": bk}, num_warps=warps,
                          expect_mma=prec != "ieee")
               for dt in ("fp32", "fp16", "bf16") for prec in MODES for bt, bm, bk, warps in MEL_PROJECT_TILES]
    return gemm + fft + project


# BigVGAN's convention: reflect pad (n_fft − hop)/2 per side, no centring.
_BIGVGAN = {"n_fft": 1024, "hop": 256, "pad": 384}
_MEL_CASES = [
    Case({"shape": (1, 2000), **_BIGVGAN, "n_mels": 100, "filterbank": "slaney"}),
    Case({"shape": (2, 700), "n_fft": 64, "hop": 16, "n_mels": 20, "filterbank": "random"}),
    Case({"shape": (1, 1201), "n_fft": 256, "hop": 64, "win_length": 200, "n_mels": 129, "filterbank": "slaney"}),
    Case({"shape": (1, 240000), **_BIGVGAN, "n_mels": 100, "filterbank": "slaney"}, devices=("cuda",)),
    Case({"shape": (2, 44100), "n_fft": 2048, "hop": 512, "n_mels": 128, "filterbank": "random"}, devices=("cuda",)),
    # tf32 (~1e-3 relative per bin) on the dense random filterbank: a Slaney band of 2-3 low bins that happen to be
    # near zero turns that absolute error into a large log error, which says nothing about the kernel.
    Case({"shape": (1, 48000), **_BIGVGAN, "n_mels": 100, "filterbank": "random", "precision": "tf32"},
         devices=("cuda",), dtypes=("float32",)),
    Case({"shape": (2, 48000), **_BIGVGAN, "n_mels": 100, "filterbank": "slaney", "precision": "tf32x3"},
         devices=("cuda",), dtypes=("float32",)),
]
_MEL_BENCH = [("BigVGAN mel 10 s @24k [1, 240000] n_fft 1024 hop 256 100 mels",
               {"shape": (1, 240000), **_BIGVGAN, "n_mels": 100}),
              ("large [16, 480000] n_fft 1024 hop 256 100 mels", {"shape": (16, 480000), **_BIGVGAN, "n_mels": 100}),
              ("large [16, 480000] n_fft 1024 hop 256 100 mels, tf32x3 FFT",
               {"shape": (16, 480000), **_BIGVGAN, "n_mels": 100, "precision": "tf32x3"})]

for _name, _magnitude in (("mel_spectrogram", False), ("mel_spectrogram_magnitude", True)):
    register(Kernel(
        name=_name, family="spectral",
        doc="log(max(M · S, eps)), S = " + ("sqrt(Re² + Im² + mag_eps)" if _magnitude else "Re² + Im²")
            + " of the reflect-padded periodic-Hann STFT; M [n_mels, F]",
        make_inputs=lambda p, dt, dev, g: _mel_inputs(p, dt, dev, g),
        alloc_out=_mel_alloc, launch=mel_spectrogram, oracle=mel_oracle, peer=mel_torch,
        cases=[Case({**c.params, "magnitude": _magnitude}, c.devices, c.dtypes) for c in _MEL_CASES],
        tol_kind="reduction",
        bench=[BenchShape(label, {**p, "magnitude": _magnitude}, flops=_mel_flops, bytes=_mel_bytes,
                          dtypes=("float32",) if "precision" in p else None)
               for label, p in _MEL_BENCH],
        variants=lambda m=_magnitude: _mel_variants(m),
    ))


def _source_inputs(p, dtype, device, gen):
    B, T, K = p["batch"], p["frames"] * p["upsample"], p["harmonics"]
    # F0 in Hz, 80..400 voiced with unvoiced stretches (0 Hz) between, as a pitch tracker gives; held per
    # frame and slightly jittered, so the frame-rate resampling matters.
    per_frame = torch.rand(B, p["frames"], generator=gen) * 320 + 80
    per_frame[torch.rand(B, p["frames"], generator=gen) < 0.25] = 0.0
    f0 = per_frame.repeat_interleave(p["upsample"], 1) + torch.randn(B, T, generator=gen) * (per_frame.repeat_interleave(
        p["upsample"], 1) > 0)
    rand_ini = torch.rand(B, K, generator=gen)
    rand_ini[:, 0] = 0
    noise = torch.randn(B, K, T, generator=gen).transpose(1, 2)
    return {"f0": f0[..., None].to(dtype).to(device), "merge_weight": (torch.randn(1, K, generator=gen) * 0.3).to(
                dtype).to(device),
            "merge_bias": (torch.randn(1, generator=gen) * 0.1).to(dtype).to(device),
            "rand_ini": rand_ini.to(dtype).to(device), "noise": noise.to(dtype).to(device),
            "sample_rate": _SR, "upsample_scale": p["upsample"], "sine_amp": 0.1, "noise_std": 0.003,
            "voiced_threshold": 10.0}


def _source_flops(p):
    return p["batch"] * p["frames"] * p["upsample"] * p["harmonics"] * 12.0


def _source_bytes(p, itemsize):
    T = p["frames"] * p["upsample"]
    return itemsize * p["batch"] * T * (2 + p["harmonics"])


def _source_variants():
    return [AotVariant("_source_phase_scan_kernel[fp32]", _source_phase_scan_kernel,
                       {"f0_ptr": "*fp32", "rand_ptr": "*fp32", "cyc_ptr": "*fp64", "T": "i32", "L": "i32",
                        "scale": "fp32", "sample_rate": "fp32", "K": "i32"},
                       {"BLOCK_L": SCAN_BLOCK_L, "BLOCK_K": 16}),
            AotVariant("_harmonic_source_kernel[fp32]", _harmonic_source_kernel,
                       {"f0_ptr": "*fp32", "cyc_ptr": "*fp64", "noise_ptr": "*fp32", "w_ptr": "*fp32",
                        "bias_ptr": "*fp32", "y_ptr": "*fp32", "T": "i32", "L": "i32", "scale": "fp32", "K": "i32",
                        "ns_b": "i64", "ns_t": "i64", "ns_k": "i64", "sine_amp": "fp32", "noise_std": "fp32",
                        "threshold": "fp32"},
                       {"BLOCK_T": SOURCE_BLOCK_T, "BLOCK_K": 16})]


register(Kernel(
    name="harmonic_source", family="spectral",
    doc="tanh(w · (sin(2π·U·lerp(cumsum(lerp(frac(f0·k/sr))))) ·amp·uv + noise_amp·noise) + b), draws injected",
    make_inputs=_source_inputs, alloc_out=lambda i: torch.empty_like(i["f0"]), launch=harmonic_source,
    oracle=harmonic_source_oracle, peer=harmonic_source_torch,
    cases=[Case({"batch": 2, "frames": 5, "upsample": 30, "harmonics": 9}),
           Case({"batch": 1, "frames": 4, "upsample": 300, "harmonics": 9}),
           Case({"batch": 1, "frames": 7, "upsample": 7, "harmonics": 3}),
           Case({"batch": 1, "frames": 800, "upsample": 300, "harmonics": 9}, devices=("cuda",)),
           Case({"batch": 3, "frames": 211, "upsample": 300, "harmonics": 9}, devices=("cuda",))],
    dtypes=("float32",),
    bench=[BenchShape("Kokoro harmonic source 10 s [1, 240000, 9]",
                      {"batch": 1, "frames": 800, "upsample": 300, "harmonics": 9},
                      flops=_source_flops, bytes=_source_bytes),
           BenchShape("large [16, 480000, 9]", {"batch": 16, "frames": 1600, "upsample": 300, "harmonics": 9},
                      flops=_source_flops, bytes=_source_bytes)],
    variants=_source_variants,
))
