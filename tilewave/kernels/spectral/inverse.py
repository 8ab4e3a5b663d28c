"""The inverse STFT: the small transforms (rows and frame-vector forms), the FFT and GEMM frames with an
overlap-add pass, and `istft` / `istft_exp_sin`."""
from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.kernels.spectral.common import (INTERPRETED, GEMM_WARPS, _bases, _bit_reverse, _check_contiguous,
                                              _exp_fast, _fft_precision, _hann_t, _sincos, _sincos_unreduced,
                                              _strided_sum, padded_hann)
from tilewave.kernels.spectral.dft import DIRECT_MAX_NFFT
from tilewave.kernels.spectral.fft import _fft_tables, _istft_fft_frames_kernel, fft_config, fft_split
from tilewave.precision import check as check_precision


ISTFT_FRAMES_TILE = (64, 64, 16)  # frames, taps, bins per step
if INTERPRETED:
    ISTFT_FRAMES_TILE = (64, 256, 256)


OLA_BLOCK_S = 256

# Small inverse transform, frame-vector form (n_fft <= DIRECT_MAX_NFFT): frames per program, warps, how the
# overlap-add leaves (0 one strided store per tap-row, 1 contiguous chunks of at most ISTFT_OLA_CHUNK samples
# assembled by gathers, 2 joined [frames, hop] tiles): the fastest of the forms timed (benchmarks/TILE_HISTORY.md).
ISTFT_OLA_FRAMES, ISTFT_OLA_WARPS, ISTFT_OLA_MODE, ISTFT_OLA_CHUNK = 256, 4, 1, 4096

# The rows form (_istft_rows_kernel): frames per thread (at least the overlap − 1), tile rows per program,
# warps, whether the phase gets a range reduction before the SFU, whether the inverse DFT splits even and odd
# bins (small_istft_constants). Used while a thread's taps (frames·n_fft) fit ISTFT_ROWS_MAX_TAPS (registers,
# and ptxas compile time), else the frame-vector form (benchmarks/TILE_HISTORY.md).
ISTFT_ROWS_FRAMES, ISTFT_ROWS_TILE, ISTFT_ROWS_WARPS, ISTFT_ROWS_REDUCE, ISTFT_ROWS_SPLIT = 4, 32, 1, True, True

ISTFT_ROWS_MAX_TAPS = 96

ISTFT_SMALL_KERNEL = "rows"  # "vectors": the frame-vector kernel for every small inverse transform


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


# One binary for every length and every view: each new specialisation is a fresh compile of this unrolled
# kernel, and a server met them mid-load (seconds a batch). Its loads are scalar per
# thread whatever T, the strides and the pointers' alignment; only the store's vector width can gain from L_out.
# The interior and edge programs are two launches of two binaries: compiled as one kernel (both forms behind a
# runtime branch) Triton's coalescing pass took 19.7 s, apart 4.9 + 5.6 s (sm_90 from this repo's CPU).
@triton.jit(do_not_specialize=["T", "L_out", "batch_stride", "p_first", "n_head", "p_tail"],
            do_not_specialize_on_alignment=["a_ptr", "c_ptr"])
def _istft_rows_kernel(a_ptr, c_ptr, y_ptr, T, L_out, batch_stride, p_first, n_head, p_tail,
                       N_FFT: tl.constexpr, HOP: tl.constexpr,
                       EVEN: tl.constexpr, ODD: tl.constexpr, WIN: tl.constexpr, WSQ: tl.constexpr,
                       SPLIT: tl.constexpr, EXP_SIN: tl.constexpr, FAST: tl.constexpr, REDUCE: tl.constexpr,
                       F: tl.constexpr, R: tl.constexpr, EDGE: tl.constexpr):
    # grid: (B, programs of this launch). The row's programs p = 0 … cdiv(rows, (R − 1)·F) − 1 cover hop-rows
    # t = S0 … (L_out − 1 + N_FFT//2)//HOP, S0 = (N_FFT//2)//HOP; hop-row t holds samples j = t·HOP + u − N_FFT//2,
    # u < HOP. EDGE=False: the interior programs p = p_first + pid, all of whose frames and samples lie inside the
    # signal (istft_rows_programs): no masks, a constant envelope. EDGE=True: the others, masked — pid < n_head
    # is p = pid, the rest p = p_tail + pid − n_head. Small transforms, one pass, F >= OV − 1 consecutive
    # frames per thread: tile row i (a thread) takes frames t = tb + F·i + f, f < F, and owns their hop-rows, so
    # F·HOP contiguous samples. Tap u + r·HOP of frame t lands on hop-row t + r: within the row while f + r < F,
    # else it is carried to row i + 1 (the carries are summed first and moved down one row by tl.gather: one
    # value per thread and carry; a warp-local shuffle when R is one warp). Row 0 only feeds carries (its frames
    # are the previous program's last ones). Coefficients are compile-time constants (no table loads or registers).
    HALF: tl.constexpr = N_FFT // 2
    S0: tl.constexpr = HALF // HOP
    pid = tl.program_id(1)
    if EDGE:
        p = tl.where(pid < n_head, pid, p_tail + pid - n_head)
    else:
        p = p_first + pid
    tb = S0 - F + p * ((R - 1) * F)
    j0 = p * ((R - 1) * F * HOP) + (HOP * (S0 - F) - HALF)  # written so that its alignment is provable
    _istft_rows(a_ptr, c_ptr, y_ptr, tb, j0, T, L_out, batch_stride, N_FFT, HOP, EVEN, ODD, WIN, WSQ, SPLIT,
                EXP_SIN, FAST, REDUCE, F, R, EDGE)


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


def istft_rows_programs(T: int, L_out: int, n_fft: int, hop: int, f: int, rows: int) -> tuple[int, int, int]:
    """(programs per row, first interior program, last interior program + 1) of _istft_rows_kernel: program p is
    interior when its frames tb … tb + rows·f − 1 lie in [0, T) and its samples j0 + f·hop … j0 + rows·f·hop − 1
    in [0, L_out) (row 0's frames and samples only feed the carries); none: first >= last."""
    half, step = n_fft // 2, (rows - 1) * f
    s0 = half // hop
    n = triton.cdiv((L_out - 1 + half) // hop - s0 + 1, step)
    tb0, j00 = s0 - f, hop * (s0 - f) - half  # tb and j0 of program 0; both grow by step (· hop) a program
    first = max(0, -(tb0 // step), -((j00 + f * hop) // (step * hop)))  # ceil of the bounds' quotients
    last = min(n, (T - rows * f - tb0) // step + 1, (L_out - rows * f * hop - j00) // (step * hop) + 1)
    return n, first, max(first, last)


def istft_rows_launch(a, c, out, batch_stride, T, n_fft, hop, win_length, exp_sin, config):
    f, rows, warps, reduce, split = config
    B, L_out = out.shape
    n, first, last = istft_rows_programs(T, L_out, n_fft, hop, f, rows)
    args = dict(N_FFT=n_fft, HOP=hop, **small_istft_constants(n_fft, win_length, split), EXP_SIN=exp_sin,
                FAST=a.is_cuda, REDUCE=reduce, F=f, R=rows, num_warps=warps)
    if last > first:
        _istft_rows_kernel[(B, last - first)](a, c, out, T, L_out, batch_stride, first, 0, 0, EDGE=False, **args)
    if n - (last - first):
        _istft_rows_kernel[(B, n - (last - first))](a, c, out, T, L_out, batch_stride, 0, first, last, EDGE=True,
                                                   **args)
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


def istft_torch(magnitude, phase, n_fft, hop, win_length=None):
    win_length = win_length or n_fft
    return torch.istft(torch.polar(magnitude, phase), n_fft, hop, win_length, window=_hann_t(win_length, magnitude),
                       center=True)


def istft_exp_sin_torch(x, n_fft, hop):
    NF = n_fft // 2 + 1
    return istft_torch(torch.exp(x[:, :NF]), torch.sin(x[:, NF:]), n_fft, hop)
