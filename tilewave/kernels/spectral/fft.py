"""The four-step FFT (n_fft = N1·N2, power of two >= 1024): its tables, the forward STFT kernel and the inverse
frames kernel."""
from __future__ import annotations

import functools

import numpy as np
import torch
import triton
import triton.language as tl

from tilewave.kernels.spectral.common import INTERPRETED, _polar_to_cartesian, _reflect, _store_spectrum, padded_hann


# Four-step FFT kernels (n_fft a power of two >= 1024): (frames per program, warps) per dot precision, the
# fastest (benchmarks/TILE_HISTORY.md).
FFT_TILES = {"ieee": (2, 4), "tf32x3": (4, 8), "tf32": (4, 4)}
if INTERPRETED:
    FFT_TILES = {p: (16, 4) for p in FFT_TILES}


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
        # frames (the FFT's (frame, k1) rows would scatter every element to its own sector)
        kk1 = tl.arange(0, N1)
        tt = t0 + tl.arange(0, BT)
        offs = (b * NF + kk1[:, None, None] + N1 * k2[None, :, None]) * T + tt[None, None, :]
        _store_spectrum(a_ptr, c_ptr, offs, (tt < T)[None, None, :],
                        tl.permute(tl.reshape(x_re, (BT, N1, N2 // 2)), (1, 2, 0)),
                        tl.permute(tl.reshape(x_im, (BT, N1, N2 // 2)), (1, 2, 0)), POLAR)
        _store_spectrum(a_ptr, c_ptr, (b * NF + NF - 1) * T + t, (t < T) & (k1 == 0), nyquist,
                        tl.zeros_like(nyquist), POLAR)


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


def fft_split(n_fft: int) -> tuple[int, int] | None:
    """(N1, N2) with N1·N2 = n_fft for the four-step FFT kernels, or None. N1 >= N2 >= 32: the inverse kernel's
    dot reduces over N2/2 bins, and tl.dot needs a reduction of at least 16 on the GPU (n_fft 256 = 16·16 does
    not compile for sm_90), so smaller sizes take the DFT-GEMM kernels."""
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
