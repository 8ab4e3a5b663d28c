"""1-D convolutions, NCL layout: conv, transposed conv, depthwise transposed conv, and a fused form.

conv1d            y[b, o, t] = bias[o] + Σ_{c ∈ group(o), k} W[o, c, k] · x[b, c, t·s + k·d − p]
                  W [C_out, C_in/G, K] (OIK);  L_out = ⌊(L + 2p − d(K − 1) − 1) / s⌋ + 1
conv1d_transpose  y[b, o, t] = bias[o] + Σ_{c ∈ group(o), k, i} W[c, o, k] · x[b, c, i]
                  over i·s + k·d − p = t, 0 ≤ i < L
                  W [C_in, C_out/G, K] (IOK);  L_out = (L − 1)·s − 2p + d(K − 1) + output_padding + 1
                  gather form: each output sums the inputs that reach it, so no atomics and no zeroing pass.
conv1d_transpose_depthwise   the transposed conv with G = C_in = C_out, W [C, 1, K].
conv1d_fused      y = scale · (conv(act(x)) + bias + residual), for conv and transposed conv, where
                  act is leaky_relu (runtime slope) or snake (x + sin(α_c·x)² / (β_c + 1e-9), per input
                  channel; β = α for plain snake). Both acts map 0 to 0, so activating the zero-padded
                  input equals padding the activated one. The act runs inside the loads; snake, whose
                  sin is costly, only while each input is activated at most SNAKE_FUSED_MAX_REPEATS
                  times (taps × output-channel tiles), else in one separate pass first.

Three code paths, chosen per call by `uses_gemm`, `uses_tap_kernel` and `tap_kernel_fits` (tiles by
`pick_tap_config` / `pick_gemm_config`):
- tap-major implicit GEMM (_conv_tap_kernel) for tensor-core calls (16-bit storage, or float32 as tf32 or
  tf32x3) whose taps are contiguous shifts of the input: stride-1 convs and every phase of a transposed
  conv. The reduction walks (tap u, block of BLOCK_K input channels), so both operands are rectangles:
  the weight repacked once per (weight, version) to [G·phases·C_out/G, U·C_in_pad] (channels zero-padded
  to the block), and x[b, c0 : c0+BK, t0 + shift_u : +BN]. On sm_90 both arrive by TMA (tensor
  descriptors) and Triton's pipeliner overlaps the copies with the asynchronous wgmma; x goes through one
  copy into time-major layout with zero rows for the padding (a TMA box must start 16-byte aligned in its
  innermost dimension: channels, not the shifted time). An input activation runs on the B tile in
  registers. In the CPU interpreter the same rectangles come through masked loads from x. GPUs without
  TMA keep the gather kernel.
  A transposed conv runs there in one of two forms (`uses_interleaved_phases`, per tile class and stride,
  from H200 measurements): one phase per program, each storing its outputs `stride` elements apart, or
  phase-interleaved: all phases of a time tile in one program, as ONE stride-1 conv whose rows are (o, φ)
  (P = next_power_of_2(s) rows per output channel, zero for φ ≥ s) over the union of the phases' input
  shifts (U' = span of base_φ − u·d/g; a phase's missing shifts are zero weights). Row (o, φ), column j of
  the accumulator is y[o, j·s + φ]: the epilogue reshapes [BM/P, P, BN] → [BM/P, BN·P] in registers and
  stores stretches contiguous along time (16-byte vectors where s = P). It spends up to U'/U · P/s more
  tensor-core work on the zeros, for full-width stores.
- gather implicit GEMM (_conv_gemm_kernel) for exact float32 (FMA units) and strided convs, per group:
  M = C_out/G output channels, N = output positions, reduction R = (C_in/G) × taps. A is the weight: OIK rows are already contiguous over (c, k), so the
  reduction loop walks the weight contiguously and the taps sit inside it; B is gathered from x on the fly
  (masked loads give the zero padding). A transposed conv is split by output phase φ = t mod s: outputs
  t = φ + s·j receive exactly the taps k ≡ k0_φ (mod s/gcd(s, d)), a stride-1 conv in j whose input
  offset is base_φ − u·d/gcd(s, d) for the u-th tap. Its weight is repacked once per (weight, version)
  into [G, s, C_out/G, (C_in/G)·U] with zero taps where k ≥ K. Weight tiles stream through cp.async
  stages; the x tile starts at an arbitrary element (the tap shift), which cp.async cannot take for
  2-byte elements, so 16-bit kernels load the next x tile into registers while the current dot runs.
- direct (no dot) for depthwise and tiny channel counts (tl.dot needs M, N, K ≥ 16 on the GPU).
Precision: float32 storage multiplies in exact float32 ('ieee', FMA), 'tf32x3' (tensor cores, each product
split into high and low tf32 parts: float32-class error) or 'tf32' (tensor cores, ~1e-3 relative);
float16/bfloat16 storage runs on tensor cores; accumulation is float32 always.
Launch invariants: x [B, C_in, L] (or [C_in, L]); every tensor is made contiguous; one dtype for
x, weight, bias and residual; offsets into x and y are int64 (B·C·L may pass 2³¹). TMA: a box past a
group's channels reads the next group's inputs, multiplied by zero weights, so a non-finite value there
would leak into the sum (the pointer path masks them); grouped calls whose group starts are not
16-byte aligned run on the gather kernel.
"""
from __future__ import annotations

import functools
import math
import os
import weakref
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels import activation
from tilewave.kernels._common import hopper_or_newer, randn, sin
from tilewave.precision import check as check_precision, dot_input

ACTS = ("none", "leaky_relu", "snake")
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _activate(x, ci, cmask, a_ptr, b_ptr, slope, ACT: tl.constexpr, FAST_SIN: tl.constexpr):
    # x float32; ci the input channel of each row (broadcastable to x), cmask where ci is valid.
    if ACT == "leaky_relu":
        x = tl.where(x > 0, x, x * slope)
    elif ACT == "snake":
        a = tl.load(a_ptr + ci, mask=cmask, other=1.0).to(tl.float32)
        b = tl.load(b_ptr + ci, mask=cmask, other=1.0).to(tl.float32)
        s = sin(a * x, FAST_SIN)
        x = x + s * s / (b + 1e-9)
    return x


@triton.jit
def _store_output(acc, y_ptr, bias_ptr, res_ptr, row, co, co_mask, t, t_mask, L_out, scale,
                  HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr):
    # row: int64 output row (b·C_out + o) per output channel; the residual has y's layout.
    if HAS_BIAS:
        acc += tl.load(bias_ptr + co, mask=co_mask, other=0.0).to(tl.float32)[:, None]
    offs = row[:, None] * L_out + t[None, :]
    mask = co_mask[:, None] & t_mask[None, :]
    if HAS_RES:
        acc += tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (acc * scale).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _store_phase_interleaved(acc, y_ptr, bias_ptr, res_ptr, b, g, C_out, C_out_g, m0, rows_g, j0, L_out, phases,
                             scale, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, PHASE_PAD: tl.constexpr,
                             DENSE: tl.constexpr, ROW_ALIGN: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr):
    # acc rows (o, φ) = o·PHASE_PAD + φ, columns j: y[b, g·C_out_g + o, j·phases + φ] for φ < phases. The
    # phases are interleaved in registers, so the tile leaves as [BLOCK_M / PHASE_PAD, BLOCK_N·PHASE_PAD]
    # stretches that are contiguous along time (DENSE: phases == PHASE_PAD, no gaps, vector stores; ROW_ALIGN
    # divides L_out, so that they vectorise where L_out is not a multiple of 16, which Triton would assume).
    BLOCK_O: tl.constexpr = BLOCK_M // PHASE_PAD
    if HAS_BIAS:
        r = m0 + tl.arange(0, BLOCK_M)
        acc += tl.load(bias_ptr + g * C_out_g + r // PHASE_PAD, mask=r < rows_g, other=0.0).to(tl.float32)[:, None]
    if not HAS_RES:
        acc = (acc * scale).to(y_ptr.dtype.element_ty)
    v = tl.reshape(tl.permute(tl.reshape(acc, (BLOCK_O, PHASE_PAD, BLOCK_N)), (0, 2, 1)),
                   (BLOCK_O, BLOCK_N * PHASE_PAD))
    o = m0 // PHASE_PAD + tl.arange(0, BLOCK_O)
    c = tl.arange(0, BLOCK_N * PHASE_PAD)
    if DENSE:
        t = j0 * PHASE_PAD + c
        t_mask = t < L_out // ROW_ALIGN * ROW_ALIGN  # == L_out, spelled so the mask stays uniform over a vector
    else:
        ph = c % PHASE_PAD
        t = (j0 + c // PHASE_PAD) * phases + ph
        t_mask = (ph < phases) & (t < L_out)
    offs = tl.multiple_of((b * C_out + g * C_out_g + o).to(tl.int64) * L_out, ROW_ALIGN)[:, None] + t[None, :]
    mask = (o < C_out_g)[:, None] & t_mask[None, :]
    if HAS_RES:
        v = (v + tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)) * scale
    tl.store(y_ptr + offs, v.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _load_x_tile(x_rows, r0, R, U, pos0, tap_step, L_in, BLOCK_K: tl.constexpr):
    # B[r, j] = x[c(r), pos0[j] + u(r)·tap_step], zero outside [0, L_in) (the conv's zero padding).
    # Rows past R get a shift that puts them out of range, so one unsigned compare per element masks
    # the padding on both sides and the reduction tail (this index arithmetic runs on every element).
    r = r0 + tl.arange(0, BLOCK_K)
    c = r // U
    shift = tl.where(r < R, (r - c * U) * tap_step, -(1 << 30))
    pos = pos0[None, :] + shift[:, None]
    mask = pos.to(tl.uint32, bitcast=True) < L_in.to(tl.uint32)
    return tl.load(x_rows + c.to(tl.int64)[:, None] * L_in + pos, mask=mask, other=0.0)


@triton.jit
def _gemm_tile(n_phases, C_out_g, G, BLOCK_M: tl.constexpr):
    # grid (phases · M tiles · N tiles, B·G), phases fastest, then M tiles: see _conv_gemm_kernel.
    pid = tl.program_id(0)
    bg = tl.program_id(1)
    tiles_m = tl.cdiv(C_out_g, BLOCK_M)
    return pid % n_phases, (pid // n_phases) % tiles_m, pid // (n_phases * tiles_m), bg // G, bg % G


# Specialised: L_out and the reduction size (divisible by 16: the output and the weight rows
# vectorise) and in_step/out_step (== 1: x loads and y stores are contiguous along time). The other
# sizes would only multiply the compiled variants.
@triton.jit(do_not_specialize=["C_in", "L_in", "C_out", "G", "C_in_g", "C_out_g", "U", "tap_step", "base"])
def _conv_gemm_kernel(x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
                      C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, R, U, n_phases,
                      in_step, tap_step, base, out_step, slope, scale,
                      TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr,
                      HAS_RES: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                      PREFETCH: tl.constexpr, FAST_SIN: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (phases · cdiv(C_out_g, BLOCK_M) · cdiv(positions, BLOCK_N), B·G). Phases vary fastest, then
    # output-channel tiles: programs that run together share their x tile (read from L2, not DRAM) and,
    # for a transposed conv, interleave their strided stores into the same output sectors.
    # Reduction index r = c·U + u (c input channel in the group, u tap); input position of output j:
    # j·in_step + base + u·tap_step (conv: s, −p, d; transposed phase φ: 1, base_φ, −d/gcd(s, d)).
    # The weight tile is contiguous and aligned, so Triton's pipeliner streams it with cp.async over
    # num_stages buffers. The x tile starts at an arbitrary element offset (the tap shift): 2-byte
    # elements cannot go through cp.async, so for 16-bit storage (PREFETCH) the next x tile is loaded
    # into registers while the tensor cores work on the current one.
    phase, pid_m, pid_n, b, g = _gemm_tile(n_phases, C_out_g, G, BLOCK_M)
    if TRANSPOSED:
        base = tl.load(phase_base_ptr + phase)
    co = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    j = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    co_mask = co < C_out_g
    pos0 = j * in_step + base
    x_rows = x_ptr + (b * C_in + g * C_in_g).to(tl.int64) * L_in
    w_rows = w_ptr + ((g * n_phases + phase) * C_out_g + co).to(tl.int64)[:, None] * R
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if PREFETCH:
        xb_next = _load_x_tile(x_rows, 0, R, U, pos0, tap_step, L_in, BLOCK_K)
    for r0 in range(0, R, BLOCK_K):
        r = r0 + tl.arange(0, BLOCK_K)
        a = tl.load(w_rows + r[None, :], mask=co_mask[:, None] & (r < R)[None, :], other=0.0)
        if PREFETCH:
            xb = xb_next
        else:
            xb = _load_x_tile(x_rows, r0, R, U, pos0, tap_step, L_in, BLOCK_K)
        if ACT != "none":
            xb = _activate(xb.to(tl.float32), (g * C_in_g + r // U)[:, None], (r < R)[:, None],
                           a_ptr, b_ptr, slope, ACT, FAST_SIN).to(x_ptr.dtype.element_ty)
        if UPCAST:  # the CPU interpreter cannot multiply bfloat16: widen there, never on the GPU
            a = a.to(tl.float32)
            xb = xb.to(tl.float32)
        acc = tl.dot(a, xb, acc, input_precision=PRECISION)
        if PREFETCH:  # after the dot in program order, so the address arithmetic overlaps the async MMA
            xb_next = _load_x_tile(x_rows, r0 + BLOCK_K, R, U, pos0, tap_step, L_in, BLOCK_K)
    t = j * out_step + phase
    row = (b * C_out + g * C_out_g + co).to(tl.int64)
    _store_output(acc, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out, scale,
                  HAS_BIAS, HAS_RES)


@triton.jit
def _conv_tap_tile(tile, x_desc, w_desc, x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
                   C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, C_in_pad, U, n_phases,
                   tap_step, base, out_step, x_shift, tiles_n, slope, scale,
                   TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr,
                   PRECISION: tl.constexpr, UPCAST: tl.constexpr, USE_TMA: tl.constexpr,
                   FAST_SIN: tl.constexpr, PHASE_PAD: tl.constexpr, DENSE: tl.constexpr, ROW_ALIGN: tl.constexpr,
                   PHASE_MAJOR: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # one output tile of _conv_tap_kernel
    tiles_m = tl.cdiv(C_out_g, BLOCK_M)
    per_bg = n_phases * tiles_m * tiles_n
    n_cblk = C_in_pad // BLOCK_K
    R_pad = U * C_in_pad
    kk = tl.arange(0, BLOCK_K)
    bg = tile // per_bg
    rest = tile - bg * per_bg
    phase = rest % n_phases
    pid_m = (rest // n_phases) % tiles_m
    pid_n = rest // (n_phases * tiles_m)
    b = bg // G
    g = bg - b * G
    if TRANSPOSED:
        shift0 = tl.load(phase_base_ptr + phase)
    else:
        shift0 = base
    m0 = pid_m * BLOCK_M
    j0 = pid_n * BLOCK_N
    co = m0 + tl.arange(0, BLOCK_M)
    co_mask = co < C_out_g
    x_row0 = b * C_in + g * C_in_g
    w_row0 = (g * n_phases + phase) * C_out_g
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, U * n_cblk):
        u = i // n_cblk
        c0 = (i - u * n_cblk) * BLOCK_K
        pos0 = j0 + shift0 + u * tap_step
        if USE_TMA:
            a = w_desc.load([w_row0 + m0, u * C_in_pad + c0])
            xb = tl.trans(x_desc.load([b * L_in + pos0 + x_shift, g * C_in_g + c0]))
        else:
            a = tl.load(w_ptr + (w_row0 + co).to(tl.int64)[:, None] * R_pad + (u * C_in_pad + c0 + kk)[None, :],
                        mask=co_mask[:, None], other=0.0)
            pos = pos0 + tl.arange(0, BLOCK_N)
            xmask = ((c0 + kk) < C_in_g)[:, None] & ((pos >= 0) & (pos < L_in))[None, :]
            xb = tl.load(x_ptr + (x_row0 + c0 + kk).to(tl.int64)[:, None] * L_in + pos[None, :], mask=xmask,
                         other=0.0)
        if ACT != "none":
            ci = g * C_in_g + c0 + kk
            xb = _activate(xb.to(tl.float32), ci[:, None], ((c0 + kk) < C_in_g)[:, None], a_ptr, b_ptr, slope,
                           ACT, FAST_SIN).to(x_ptr.dtype.element_ty)
        if UPCAST:  # the CPU interpreter cannot multiply bfloat16: widen there, never on the GPU
            a = a.to(tl.float32)
            xb = xb.to(tl.float32)
        acc = tl.dot(a, xb, acc, input_precision=PRECISION)
    if PHASE_PAD > 1:
        _store_phase_interleaved(acc, y_ptr, bias_ptr, res_ptr, b, g, C_out, C_out_g // PHASE_PAD, m0, C_out_g, j0,
                                 L_out, out_step, scale, HAS_BIAS, HAS_RES, PHASE_PAD, DENSE, ROW_ALIGN, BLOCK_M,
                                 BLOCK_N)
    else:
        row = (b * C_out + g * C_out_g + co).to(tl.int64)
        if HAS_RES:
            # in two column halves: a whole tile's residual, accumulator and 64-bit addresses at once spill
            lo, hi = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            t = (j0 + tl.arange(0, BLOCK_N // 2)) * out_step + phase
            _store_output(lo, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out,
                          scale, HAS_BIAS, HAS_RES)
            t += (BLOCK_N // 2) * out_step
            _store_output(hi, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out,
                          scale, HAS_BIAS, HAS_RES)
        elif PHASE_MAJOR:
            # y: the phase-major scratch [B·C_out, n_phases, L_out], L_out = positions per phase: each phase's
            # outputs leave contiguous (stored `out_step` apart they were partial-sector writes, ~5x slower at
            # stride 10); _interleave_phases_kernel then writes the output
            # (in two column halves: the contiguous stores want another register layout than the MMA's, and
            # converting the whole tile at once spills)
            lo, hi = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            prow = row * n_phases + phase
            j = j0 + tl.arange(0, BLOCK_N // 2)
            _store_output(lo, y_ptr, bias_ptr, res_ptr, prow, g * C_out_g + co, co_mask, j, j < L_out, L_out, scale,
                          HAS_BIAS, HAS_RES)
            j += BLOCK_N // 2
            _store_output(hi, y_ptr, bias_ptr, res_ptr, prow, g * C_out_g + co, co_mask, j, j < L_out, L_out, scale,
                          HAS_BIAS, HAS_RES)
        else:
            t = (j0 + tl.arange(0, BLOCK_N)) * out_step + phase
            _store_output(acc, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out,
                          scale, HAS_BIAS, HAS_RES)


# L_out specialised (divisible by 16: the stores vectorise); the other sizes are runtime values.
@triton.jit(do_not_specialize=["C_in", "L_in", "C_out", "G", "C_in_g", "C_out_g", "C_in_pad", "U", "tap_step",
                               "base", "x_shift", "tiles_n", "n_tiles", "x_rows", "x_pitch"])
def _conv_tap_kernel(x_desc, w_desc, x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
                     C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, C_in_pad, U, n_phases,
                     tap_step, base, out_step, x_shift, tiles_n, n_tiles, x_rows, x_pitch, slope, scale,
                     TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr,
                     PRECISION: tl.constexpr, UPCAST: tl.constexpr, USE_TMA: tl.constexpr,
                     DEVICE_DESC: tl.constexpr, PERSISTENT: tl.constexpr, FAST_SIN: tl.constexpr,
                     PHASE_PAD: tl.constexpr, DENSE: tl.constexpr, ROW_ALIGN: tl.constexpr,
                     PHASE_MAJOR: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    # Tap-major implicit GEMM for a stride-1 conv or one output phase of a transposed conv. Reduction step
    # i covers tap u = i // n_cblk and input channels c0 .. c0 + BLOCK_K of the group, so both operand
    # tiles are rectangles: A = Wp[row, u·C_in_pad + c0 : +BLOCK_K] (weight repacked tap-major, channels
    # zero-padded to C_in_pad), B = x[b, g·C_in_g + c0 : +BLOCK_K, j0 + base + u·tap_step : +BLOCK_N].
    # USE_TMA: both through tensor descriptors, and the pipeliner overlaps the copies of the next stages
    # with the asynchronous wgmma. x_desc is a zero-padded time-major copy [B·L_in, C_in] of x (L_in the
    # padded length, x_shift its left padding): its [BLOCK_N, BLOCK_K] boxes start at any time (TMA wants
    # the innermost coordinate 16-byte aligned, which a channel offset is and a tap shift is not: on
    # sm_90 a misaligned one faults), the zero rows are the conv's padding and keep boxes inside their
    # batch, and the boxes are K-major as tf32 wgmma needs. Columns of B past the group's channels belong
    # to the next group; their weights are the zero padding of Wp.
    # DEVICE_DESC: x_desc and w_desc arrive as the plain pointers (time-major copy [x_rows, x_pitch],
    # packed weight) and the descriptors are made here, which keeps the host launch cheap (a host
    # descriptor is encoded on the CPU at every launch); it needs triton.set_allocator for their scratch.
    # Otherwise plain masked loads of the same rectangles from x (the CPU interpreter).
    # Tiles (n_tiles = phases · M tiles · N tiles · B·G, phases fastest, then M tiles, as in
    # _conv_gemm_kernel): one per program, or PERSISTENT, one program per SM walking them with a grid
    # stride in one flattened, pipelined loop, so that the next tile's loads overlap this tile's epilogue.
    # PHASE_PAD > 1: a phase-interleaved transposed conv (module doc): a stride-1 conv here (C_out_g counts
    # the rows (o, φ), out_step = s), whose epilogue interleaves the phases (_store_phase_interleaved).
    if DEVICE_DESC:
        x_desc = tl.make_tensor_descriptor(x_desc, shape=[x_rows, C_in], strides=[x_pitch, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[G * n_phases * C_out_g, U * C_in_pad],
                                           strides=[U * C_in_pad, 1], block_shape=[BLOCK_M, BLOCK_K])
    args = (x_desc, w_desc, x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
            C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, C_in_pad, U, n_phases, tap_step, base, out_step, x_shift,
            tiles_n, slope, scale)
    if PERSISTENT:
        for tile in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), flatten=True):
            _conv_tap_tile(tile, *args, TRANSPOSED, ACT, HAS_BIAS, HAS_RES, PRECISION, UPCAST, USE_TMA, FAST_SIN,
                           PHASE_PAD, DENSE, ROW_ALIGN, PHASE_MAJOR, BLOCK_M, BLOCK_N, BLOCK_K)
    else:
        _conv_tap_tile(tl.program_id(0), *args, TRANSPOSED, ACT, HAS_BIAS, HAS_RES, PRECISION, UPCAST, USE_TMA,
                       FAST_SIN, PHASE_PAD, DENSE, ROW_ALIGN, PHASE_MAJOR, BLOCK_M, BLOCK_N, BLOCK_K)


@triton.jit(do_not_specialize=["C", "L", "Lp", "left"])
def _time_major_pad_kernel(x_ptr, xt_ptr, C, L, Lp, pitch, left, BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr):
    # xt[b, t, c] = x[b, c, t − left] inside x, 0 elsewhere (t < Lp, c < pitch): the tap kernel's time-major
    # input, in one pass. grid (cdiv(Lp, BLOCK_T), cdiv(pitch, BLOCK_C), B).
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    b = tl.program_id(2).to(tl.int64)
    pos = t - left
    inside = (c < C)[:, None] & ((pos >= 0) & (pos < L))[None, :]
    v = tl.load(x_ptr + b * C * L + c.to(tl.int64)[:, None] * L + pos[None, :], mask=inside, other=0.0)
    tl.store(xt_ptr + b * Lp * pitch + t.to(tl.int64)[:, None] * pitch + c[None, :], tl.trans(v),
             mask=(t < Lp)[:, None] & (c < pitch)[None, :])


@triton.jit(do_not_specialize=["P", "L_out"])
def _interleave_phases_kernel(src_ptr, y_ptr, P, L_out, S: tl.constexpr, S_P: tl.constexpr, BLOCK_J: tl.constexpr):
    # y[r, j·S + φ] = src[r, φ, j] for φ < S, j·S + φ < L_out: the phase-major result of a per-phase transposed
    # conv (src [rows, S, P]) interleaved along time. grid (rows, cdiv(P, BLOCK_J)): a program reads S runs of
    # BLOCK_J and writes BLOCK_J·S consecutive samples.
    r = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    ph = tl.arange(0, S_P)
    v = tl.load(src_ptr + r * S * P + ph[:, None] * P + j[None, :], mask=(ph < S)[:, None] & (j < P)[None, :])
    t = j[:, None] * S + ph[None, :]
    tl.store(y_ptr + r * L_out + t, tl.trans(v), mask=(ph < S)[None, :] & (t < L_out))


@triton.jit(do_not_specialize=["C_in", "C_out", "C_in_g", "C_out_g", "K", "stride", "padding", "dilation"])
def _conv_direct_kernel(x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, a_ptr, b_ptr,
                        C_in, L_in, C_out, L_out, C_in_g, C_out_g, K, stride, padding, dilation, slope, scale,
                        TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr,
                        HAS_RES: tl.constexpr, FAST_SIN: tl.constexpr, BLOCK_C: tl.constexpr,
                        BLOCK_T: tl.constexpr):
    # grid: (cdiv(L_out, BLOCK_T), cdiv(C_out, BLOCK_C), B); one weight per (output channel, c, k),
    # so this suits depthwise and tiny channel counts, where a tensor-core tile would be mostly padding.
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    co = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    b = tl.program_id(2)
    co_mask = co < C_out
    t_mask = t < L_out
    g = co // C_out_g
    x_rows = x_ptr + b.to(tl.int64) * C_in * L_in
    acc = tl.zeros((BLOCK_C, BLOCK_T), dtype=tl.float32)
    for r in range(0, C_in_g * K):
        c = r // K
        k = r - c * K
        ci = g * C_in_g + c
        if TRANSPOSED:  # W [C_in, C_out/G, K]; input i reaches t when t + p − k·d = i·s
            w = tl.load(w_ptr + (ci.to(tl.int64) * C_out_g + co - g * C_out_g) * K + k, mask=co_mask, other=0.0)
            q = t + padding - k * dilation
            qc = tl.maximum(q, 0)
            pos = qc // stride
            valid = (q >= 0) & (qc - pos * stride == 0) & (pos < L_in)
        else:  # W [C_out, C_in/G, K]
            w = tl.load(w_ptr + co.to(tl.int64) * (C_in_g * K) + r, mask=co_mask, other=0.0)
            pos = t * stride + k * dilation - padding
            valid = (pos >= 0) & (pos < L_in)
        m = co_mask[:, None] & valid[None, :]
        xv = tl.load(x_rows + ci.to(tl.int64)[:, None] * L_in + pos[None, :], mask=m, other=0.0).to(tl.float32)
        if ACT != "none":
            xv = _activate(xv, ci[:, None], co_mask[:, None], a_ptr, b_ptr, slope, ACT, FAST_SIN)
        acc += w.to(tl.float32)[:, None] * xv
    row = (b * C_out + co).to(tl.int64)
    _store_output(acc, y_ptr, bias_ptr, res_ptr, row, co, co_mask, t, t_mask, L_out, scale, HAS_BIAS, HAS_RES)


# ---------------------------------------------------------------------------------------------------
# launch plans: which kernel and which tile for a call
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmConfig:
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_K: int
    num_warps: int
    num_stages: int


# Tensor-core tiles: 128×128 outputs × 64 (16-bit) or 32 (tf32) reduction per step, 3 cp.async stages
# (64 KiB of shared memory for 16-bit, 96 KiB for tf32); smaller M tiles for narrow layers (22…96
# channels) and for shapes that would leave SMs idle. Exact float32 runs on FMA units: smaller tiles.
GEMM_CONFIGS: dict[str, tuple[GemmConfig, ...]] = {
    "16bit": (GemmConfig(128, 128, 64, 8, 3), GemmConfig(64, 128, 64, 8, 3), GemmConfig(32, 128, 64, 8, 3)),
    "tf32": (GemmConfig(128, 128, 32, 8, 3), GemmConfig(64, 128, 32, 8, 3), GemmConfig(32, 128, 32, 8, 3)),
    "ieee": (GemmConfig(64, 64, 16, 4, 2), GemmConfig(32, 64, 16, 4, 2)),
}
# The tap-major kernel's tiles (tensor-core classes only), in order of preference (`pick_tap_config`):
# operands arrive by TMA, so stages are cheap in registers. Measured on the H200 (tune_conv, round 1c):
# 128×256 is fastest wherever it still gives the SMs work (16-bit large 1536ch k7: 776 µs, 91% of peak;
# 128×128: 876 µs), smaller tiles for short sequences (decoder conv_in L500: 57 µs at 128×128, 80 µs at
# 128×256).
TAP_CONFIGS: dict[str, tuple[GemmConfig, ...]] = {
    "16bit": (GemmConfig(128, 256, 64, 8, 3), GemmConfig(128, 128, 64, 8, 4), GemmConfig(64, 128, 64, 4, 4),
              GemmConfig(64, 64, 64, 4, 5)),
    "tf32": (GemmConfig(128, 256, 32, 8, 3), GemmConfig(128, 128, 32, 8, 3), GemmConfig(64, 128, 32, 4, 4)),
    # tf32x3 splits each operand into high and low parts in registers: 128×256 spills, and 64×128 beat
    # 128×128 at every model shape (decoder conv_in: 296 µs vs 414; large 1536ch: 7050 vs 7255)
    "tf32x3": (GemmConfig(64, 128, 32, 4, 4),),
}
# The phase-interleaved transposed conv (all phases of a time tile in one program, stored contiguously).
# Measured on the H200 (tune_convt round 1, µs, per phase -> interleaved, cuDNN): bf16 decoder x3 192->96
# L80000 443 -> 95 [207]; large x8 1024->512 L8192 695 -> 224 [617]; decoder x8 1536->768 L500 167 -> 78
# [156]; x2 48->24 L120064 149 -> 128 [76]; x2 384->192 L15008 143 -> 138 [74] (within the run's noise);
# fp16 Kokoro x6 256->128 L8000 146 -> 86 [60]; tf32x3 large x8 2178 -> 1843 [3927]. Per phase stays faster
# where the zero rows and shifts cost more tensor-core work than the strided stores: BigVGAN x4 1536->768
# L938 101 vs 139 (bf16), 391 vs 426 (tf32x3); leaky_relu + Kokoro x10 512->256 L800 65 vs 92.
# Strides measured faster per class (4, 5, 10 and tf32 unmeasured or slower: per phase).
INTERLEAVED_STRIDES: dict[str, frozenset[int]] = {"16bit": frozenset({2, 3, 6, 8}), "tf32": frozenset(),
                                                  "tf32x3": frozenset({8})}
# Interleave while the zero weights add at most this many multiply-adds per output (C_in/G · (U'·P/s − U)):
# 0-512 at the shapes it won, 1434-1536 at those it lost.
INTERLEAVED_MAX_EXTRA_MACS = 1024
# Its tiles, in order of preference (pick_interleaved_config): 128×256 for long reductions that fill the SMs
# (large x8: 224 µs vs 266 at 128×128 persistent; decoder x3, reduction 384: 107 vs 95), else 128×128
# (persistent by TAP_PERSISTENT: decoder x3 95 vs 133), 64×128 for small grids; tf32x3 64×64 (large x8 1843
# vs 1866 at 64×128).
INTERLEAVED_CONFIGS: dict[str, tuple[GemmConfig, ...]] = {
    "16bit": (GemmConfig(128, 256, 64, 8, 3), GemmConfig(128, 128, 64, 8, 4), GemmConfig(64, 128, 64, 4, 4)),
    "tf32": (GemmConfig(128, 128, 32, 8, 3),),
    "tf32x3": (GemmConfig(64, 64, 32, 4, 4),),
}
# the 128×256 interleaved tile: for reductions (U'·C_in/G) at least this long, on grids of a tile per SM or more
INTERLEAVED_WIDE_MIN_REDUCTION = 1024
# A tap tile is taken when it yields at least this many tiles per SM (else the next, smaller one).
TAP_MIN_TILES_PER_SM = 1 / 3
# An input activation or a residual runs on tiles of at most this many columns: 128×256 spills with them.
TAP_FUSED_MAX_N = 128
DIRECT_CONFIGS = ((16, 128), (2, 1024))  # (BLOCK_C, BLOCK_T): channel-rich and single-channel outputs
_SM_COUNT_DEFAULT = 132  # H100/H200; read from the device when there is one
# A fused input activation runs once per (tap, output-channel tile) that reads the element. Leaky ReLU
# costs ~2 ops, so it is always fused; snake costs ~8 with the SFU sine (kernels._common.sin) and a
# division, so past 3 repeats one separate snake pass (2 bytes moved per element and a launch) is cheaper, on the
# gather kernel and the tap kernel alike (tap, H200, session 3: Kokoro 256ch k11 resblock 109 -> 37 µs).
SNAKE_FUSED_MAX_REPEATS = 3


def _gemm_class(dtype: torch.dtype, precision: str) -> str:
    """Tile class: '16bit', 'tf32' (tensor-core float32, tf32 or tf32x3) or 'ieee' (FMA float32)."""
    if dtype != torch.float32:
        return "16bit"
    return "ieee" if precision == "ieee" else "tf32"


def _tap_class(dtype: torch.dtype, precision: str) -> str:
    """Tap-kernel tile class: '16bit', 'tf32' or 'tf32x3'."""
    return "tf32x3" if dtype == torch.float32 and precision == "tf32x3" else _gemm_class(dtype, precision)


def _cdiv(a: int, b: int) -> int:
    # triton.cdiv goes through Triton's constexpr machinery: microseconds per call on the launch path
    return -(-a // b)


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNT_DEFAULT


def pick_tap_config(dtype: torch.dtype, precision: str, C_out_g: int, positions: int, programs: int,
                    fused: bool, sm_count: int = _SM_COUNT_DEFAULT) -> GemmConfig:
    """The first TAP_CONFIGS tile whose grid (phases·B·G = `programs` per (M tile, N tile)) gives the SMs
    TAP_MIN_TILES_PER_SM tiles each, else the smallest; `fused` (input activation or residual) keeps to
    tiles of at most TAP_FUSED_MAX_N columns."""
    configs = [c for c in TAP_CONFIGS[_tap_class(dtype, precision)] if not fused or c.BLOCK_N <= TAP_FUSED_MAX_N]
    for c in configs:
        if _cdiv(C_out_g, c.BLOCK_M) * _cdiv(positions, c.BLOCK_N) * programs >= sm_count * TAP_MIN_TILES_PER_SM:
            return c
    return configs[-1]


def pick_interleaved_config(dtype: torch.dtype, precision: str, reduction: int, rows_g: int, positions: int,
                            programs: int, fused: bool, sm_count: int = _SM_COUNT_DEFAULT) -> GemmConfig:
    """The phase-interleaved tile: INTERLEAVED_CONFIGS in order, a tile wider than TAP_FUSED_MAX_N only for a
    reduction (U'·C_in/G) of INTERLEAVED_WIDE_MIN_REDUCTION or more whose grid gives every SM a tile and never
    fused, the others while the grid gives the SMs TAP_MIN_TILES_PER_SM tiles each; else the smallest."""
    configs = [c for c in INTERLEAVED_CONFIGS[_tap_class(dtype, precision)]
               if not fused or c.BLOCK_N <= TAP_FUSED_MAX_N]
    for c in configs:
        tiles = _cdiv(rows_g, c.BLOCK_M) * _cdiv(positions, c.BLOCK_N) * programs
        if c.BLOCK_N > TAP_FUSED_MAX_N:
            if reduction >= INTERLEAVED_WIDE_MIN_REDUCTION and tiles >= sm_count:
                return c
        elif tiles >= sm_count * TAP_MIN_TILES_PER_SM:
            return c
    return configs[-1]


def pick_gemm_config(dtype: torch.dtype, precision: str, C_out_g: int, programs_per_m_tile: int,
                     sm_count: int = _SM_COUNT_DEFAULT) -> GemmConfig:
    """The smallest M tile covering the group's output channels (capped at the largest), then a smaller
    one while the grid would leave more than half of the SMs idle."""
    configs = GEMM_CONFIGS[_gemm_class(dtype, precision)]
    cfg = configs[0]
    for c in configs:
        if c.BLOCK_M >= C_out_g:
            cfg = c
    while cfg is not configs[-1] and _cdiv(C_out_g, cfg.BLOCK_M) * programs_per_m_tile < sm_count // 2:
        cfg = configs[configs.index(cfg) + 1]
    return cfg


# An activation fused into the input loads keeps its operands in registers beside the accumulator: on the
# largest tile of each class that spills (tilewave build: 44-252 bytes of spill stores on sm_90), so such a
# call runs on a tile of at most this many rows.
FUSED_INPUT_MAX_M = {"16bit": 64, "tf32": 64, "ieee": 32}


def fused_input_config(cfg: GemmConfig, dtype: torch.dtype, precision: str) -> GemmConfig:
    """The tile for a call whose input activation is fused: cfg, or the largest one small enough."""
    cls = _gemm_class(dtype, precision)
    if cfg.BLOCK_M <= FUSED_INPUT_MAX_M[cls]:
        return cfg
    return next(c for c in GEMM_CONFIGS[cls] if c.BLOCK_M <= FUSED_INPUT_MAX_M[cls])


def tap_mode(x: torch.Tensor) -> str:
    """How _conv_tap_kernel loads its tiles: 'tma' (tensor descriptors, sm_90+) or 'pointer' (masked
    loads: older GPUs and the CPU interpreter)."""
    if x.is_cuda and not _interpreted() and hopper_or_newer(x.device):
        return "tma"
    return "pointer"


def tap_kernel_fits(x: torch.Tensor, groups: int) -> bool:
    """The tap kernel runs with TMA, or in the CPU interpreter (its pointer form, so that its indexing is
    tested there). TMA boxes start at channel g·C_in/G, which must be 16-byte aligned. GPUs without TMA and
    such groupings keep the gather kernel, which prefetches its 16-bit tiles itself."""
    if not x.is_cuda:
        return True
    return tap_mode(x) == "tma" and (groups == 1 or (x.shape[1] // groups * x.element_size()) % 16 == 0)


def uses_tap_kernel(dtype: torch.dtype, precision: str, transposed: bool, stride: int) -> bool:
    """The tap-major kernel takes tensor-core calls whose taps are contiguous shifts of the input: a
    stride-1 conv or any transposed conv (per phase); exact float32 and strided convs keep the gather."""
    return _gemm_class(dtype, precision) != "ieee" and (transposed or stride == 1)


def _row_align(L_out: int, itemsize: int) -> int:
    """The largest power of two dividing L_out, up to one 16-byte vector of elements."""
    return math.gcd(L_out, 16 // itemsize)


def interleaved_extra_macs(C_in_g: int, K: int, stride: int, padding: int, dilation: int) -> float:
    """Multiply-adds per output that the phase-interleaved form adds on zero weights: C_in/G · (U'·P/s − U)
    (U' shifts of the union, P = next_power_of_2(s) rows per channel, U taps per phase)."""
    U = _cdiv(K, stride // math.gcd(stride, dilation))
    U_all = interleaved_shifts(K, stride, padding, dilation)[1]
    return C_in_g * (U_all * triton.next_power_of_2(stride) / stride - U)


def uses_interleaved_phases(dtype: torch.dtype, precision: str, C_in_g: int, K: int, stride: int, padding: int,
                            dilation: int) -> bool:
    """Whether a transposed conv on the tap kernel computes all phases of a time tile in one program (contiguous
    stores) rather than one phase per program (stores `stride` elements apart): for the strides measured
    faster (INTERLEAVED_STRIDES) while the zero weights cost at most INTERLEAVED_MAX_EXTRA_MACS per output."""
    return (stride in INTERLEAVED_STRIDES[_tap_class(dtype, precision)]
            and interleaved_extra_macs(C_in_g, K, stride, padding, dilation) <= INTERLEAVED_MAX_EXTRA_MACS)


# A per-phase transposed conv on the tap kernel writes each phase contiguously into a phase-major scratch, and
# _interleave_phases_kernel interleaves it, for these tile classes (H200, session 3: Nsight Compute showed the
# per-phase kernel of Kokoro's up x10 512->256 L800 bound by its scattered 2-byte stores, 65 µs of L1 store
# traffic on 80 SMs; cuDNN 47 µs).
PHASE_MAJOR_CLASSES = frozenset({"16bit", "tf32", "tf32x3"})


def interleave_block(phases: int) -> int:
    """Time positions per program of _interleave_phases_kernel: ~2048 samples a program."""
    return max(16, 2048 // triton.next_power_of_2(phases))


TIME_MAJOR_PAD_BLOCK = (64, 64)  # (channels, time) per program of _time_major_pad_kernel
# Make the TMA descriptors inside the kernel (plain pointer arguments) rather than on the host.
DEVICE_DESCRIPTORS = True
# Per tile class: one program per SM walking the tiles (_conv_tap_kernel) once they outnumber the SMs this
# many times over (16-bit large 1536ch k7: 743 µs persistent, 776 µs one tile per program); never with an
# activation or residual (the epilogue of a persistent tile then spills).
TAP_PERSISTENT = {"16bit": 4, "tf32": 0, "tf32x3": 0}


@functools.lru_cache(maxsize=1024)
def _tap_geometry(transposed, B, C_out_g, groups, positions, phases, K, stride, padding, dilation, tap_step, base,
                  cfg, persistent, sm_count):
    """(N tiles, tiles, persistent launch (when there are more than `persistent` tiles per SM, 0 = never),
    [lo, hi) input positions the boxes touch over all phases, taps and tiles): shape arithmetic, cached so
    that a model's repeated layers skip it."""
    tiles_n = _cdiv(positions, cfg.BLOCK_N)
    n_tiles = phases * _cdiv(C_out_g, cfg.BLOCK_M) * tiles_n * B * groups
    if transposed:
        plan = transpose_phase_plan(K, stride, padding, dilation)
        bases, U = [0 if e is None else e[1] for e in plan], _cdiv(K, stride // math.gcd(stride, dilation))
    else:
        bases, U = [base], K
    shifts = [b + u * tap_step for b in bases for u in range(U)]
    return (tiles_n, n_tiles, 0 < persistent and n_tiles > persistent * sm_count, min(shifts),
            max(shifts) + tiles_n * cfg.BLOCK_N)


def _x_time_major(x: torch.Tensor, pos_lo: int, pos_hi: int) -> tuple[torch.Tensor, int]:
    """x [B, C, L] → (time-major copy [B, Lp, pitch] with zero rows where the kernel reads outside
    [0, L), its left padding). The zero rows make the conv's padding and keep a box from reaching into
    the next batch. Channels are padded to a 16-byte row pitch."""
    B, C, L = x.shape
    left, right = max(0, -pos_lo), max(0, pos_hi - L)
    per_16b = 16 // x.element_size()
    pitch = _cdiv(C, per_16b) * per_16b
    Lp = left + L + right
    xt = x.new_empty(B, Lp, pitch)
    grid = (_cdiv(Lp, TIME_MAJOR_PAD_BLOCK[1]), _cdiv(pitch, TIME_MAJOR_PAD_BLOCK[0]), B)
    _time_major_pad_kernel[grid](x, xt, C, L, Lp, pitch, left, BLOCK_C=TIME_MAJOR_PAD_BLOCK[0],
                                 BLOCK_T=TIME_MAJOR_PAD_BLOCK[1], num_warps=4)
    return xt, left


def _tma_scratch(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


@functools.lru_cache(maxsize=None)
def _use_tma_scratch() -> None:
    """Kernels that make TMA descriptors need global scratch for them: from PyTorch's allocator."""
    triton.set_allocator(_tma_scratch)


def uses_gemm(C_in_g: int, C_out_g: int, taps: int) -> bool:
    """Tensor-core path when a tile's M and reduction are at least 16 (tl.dot's minimum on the GPU)."""
    return C_out_g >= 16 and C_in_g * taps >= 16


def conv1d_out_len(L: int, K: int, stride: int, padding: int, dilation: int) -> int:
    return (L + 2 * padding - dilation * (K - 1) - 1) // stride + 1


def conv1d_transpose_out_len(L: int, K: int, stride: int, padding: int, output_padding: int,
                             dilation: int) -> int:
    return (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1


def transpose_phase_plan(K: int, stride: int, padding: int, dilation: int) -> list[tuple[int, int] | None]:
    """Per output phase φ = t mod stride: (k0, base) where the phase's taps are k0, k0 + s/g, … (< K) and
    output t = φ + s·j reads input j + base − u·d/g for its u-th tap (g = gcd(s, d)); None if no tap
    reaches that phase."""
    step = stride // math.gcd(stride, dilation)
    plan = []
    for phase in range(stride):
        target = (phase + padding) % stride
        k0 = next((k for k in range(min(step, K)) if (k * dilation) % stride == target), None)
        plan.append(None if k0 is None else (k0, (phase + padding - k0 * dilation) // stride))
    return plan


_PACKED: dict[tuple[int, str], tuple[weakref.ref, tuple, tuple]] = {}


def _cached_pack(weight: torch.Tensor, form: str, args: tuple, build):
    """build(weight) cached per (weight tensor, packed form): one entry each, replaced when the weight is
    updated in place or used with other arguments, so that a model's static weights are repacked once."""
    key = (id(weight), form)
    signature = (weight._version, weight.data_ptr(), *args)
    hit = _PACKED.get(key)
    if hit is not None and hit[0]() is weight and hit[1] == signature:
        return hit[2]
    result = build(weight)
    if hit is None or hit[0]() is not weight:
        weakref.finalize(weight, _PACKED.pop, key, None)
    _PACKED[key] = (weakref.ref(weight), signature, result)
    return result


def _phase_taps(K: int, stride: int, padding: int, dilation: int):
    """(phase, taps of that phase, base) for each phase some tap reaches (transpose_phase_plan)."""
    step = stride // math.gcd(stride, dilation)
    return [(phase, list(range(entry[0], K, step)), entry[1])
            for phase, entry in enumerate(transpose_phase_plan(K, stride, padding, dilation)) if entry is not None]


def _packed_transpose_weight(weight: torch.Tensor, groups: int, stride: int, padding: int, dilation: int):
    """[C_in, C_out/G, K] → ([G, s, C_out/G, (C_in/G)·U] phase-major weight, int32 base per phase, U)."""
    def build(weight):
        C_in, C_out_g, K = weight.shape
        C_in_g = C_in // groups
        U = _cdiv(K, stride // math.gcd(stride, dilation))
        w = weight.reshape(groups, C_in_g, C_out_g, K)
        packed = weight.new_zeros(groups, stride, C_out_g, C_in_g, U)
        bases = [0] * stride
        for phase, taps, base in _phase_taps(K, stride, padding, dilation):
            packed[:, phase, :, :, :len(taps)] = w[..., taps].permute(0, 2, 1, 3)
            bases[phase] = base
        return (packed.reshape(groups, stride, C_out_g, C_in_g * U),
                torch.tensor(bases, dtype=torch.int32, device=weight.device), U)
    return _cached_pack(weight, "phase-major", (groups, stride, padding, dilation), build)


def _packed_tap_weight(weight: torch.Tensor, transposed: bool, groups: int, stride: int, padding: int,
                       dilation: int, block_k: int):
    """Tap-major weight for _conv_tap_kernel: [G·phases·C_out/G, U·C_in_pad] with row (g, phase, o) and
    column u·C_in_pad + c, channels zero-padded to C_in_pad = ⌈C_in/G / block_k⌉·block_k; int32 base
    per phase (transposed), U taps per phase. A stride-1 conv is one phase whose U = K taps are its own."""
    def build(weight):
        if transposed:
            C_in, C_out_g, K = weight.shape
            C_in_g = C_in // groups
            U = _cdiv(K, stride // math.gcd(stride, dilation))
            w = weight.reshape(groups, C_in_g, C_out_g, K).permute(0, 2, 3, 1)  # [G, C_out/G, K, C_in/G]
            phases = _phase_taps(K, stride, padding, dilation)
            n_phases = stride
        else:
            C_out, C_in_g, K = weight.shape
            C_out_g, U = C_out // groups, K
            w = weight.reshape(groups, C_out_g, C_in_g, K).permute(0, 1, 3, 2)
            phases, n_phases = [(0, list(range(K)), 0)], 1
        C_in_pad = _cdiv(C_in_g, block_k) * block_k
        packed = weight.new_zeros(groups, n_phases, C_out_g, U, C_in_pad)
        bases = [0] * n_phases
        for phase, taps, base in phases:
            packed[:, phase, :, :len(taps), :C_in_g] = w[:, :, taps]
            bases[phase] = base
        return (packed.reshape(groups * n_phases * C_out_g, U * C_in_pad),
                torch.tensor(bases, dtype=torch.int32, device=weight.device), U, C_in_pad)
    return _cached_pack(weight, "tap-major", (transposed, groups, stride, padding, dilation, block_k), build)


def interleaved_shifts(K: int, stride: int, padding: int, dilation: int) -> tuple[int, int]:
    """(lowest shift, U'): the input offsets i − j over all phases' taps (transpose_phase_plan: phase φ's u-th
    tap reads input j + base_φ − u·d/g) span lowest … lowest + U' − 1, the taps of the phase-interleaved form."""
    d_g = dilation // math.gcd(stride, dilation)
    shifts = [base - u * d_g for _, taps, base in _phase_taps(K, stride, padding, dilation) for u in range(len(taps))]
    return min(shifts), max(shifts) - min(shifts) + 1


def _packed_interleaved_weight(weight: torch.Tensor, groups: int, stride: int, padding: int, dilation: int,
                               block_k: int, phase_pad: int):
    """The transposed conv as one stride-1 conv with phase_pad rows per output channel (all phases of a time
    tile in one program): [G·C_out/G·phase_pad, U'·C_in_pad], row (g, o, φ), column (shift − lowest)·C_in_pad
    + c, zero where phase φ has no tap at that shift or φ ≥ stride; (lowest shift, U', C_in_pad)."""
    def build(weight):
        C_in, C_out_g, K = weight.shape
        C_in_g = C_in // groups
        lowest, U = interleaved_shifts(K, stride, padding, dilation)
        d_g = dilation // math.gcd(stride, dilation)
        C_in_pad = _cdiv(C_in_g, block_k) * block_k
        w = weight.reshape(groups, C_in_g, C_out_g, K).permute(0, 2, 3, 1)  # [G, C_out/G, K, C_in/G]
        packed = weight.new_zeros(groups, C_out_g, phase_pad, U, C_in_pad)
        for phase, taps, base in _phase_taps(K, stride, padding, dilation):
            for u, k in enumerate(taps):
                packed[:, :, phase, base - u * d_g - lowest, :C_in_g] = w[:, :, k]
        return packed.reshape(groups * C_out_g * phase_pad, U * C_in_pad), lowest, U, C_in_pad
    return _cached_pack(weight, "phase-interleaved", (groups, stride, padding, dilation, block_k, phase_pad), build)


_DUMMY_INT: dict[torch.device, torch.Tensor] = {}


def _dummy_int(device: torch.device) -> torch.Tensor:
    if device not in _DUMMY_INT:
        _DUMMY_INT[device] = torch.zeros(1, dtype=torch.int32, device=device)
    return _DUMMY_INT[device]


# ---------------------------------------------------------------------------------------------------
# launchers (Triton path; tilewave.ops decides when to call them)
# ---------------------------------------------------------------------------------------------------
def _check_args(name, x, weight, bias, residual, alpha, beta, act, stride, padding, dilation, groups,
                precision):
    if x.dim() != 3:
        raise ValueError(f"{name}: x must be [B, C, L], got shape {tuple(x.shape)}")
    if weight.dim() != 3:
        raise ValueError(f"{name}: weight must be 3-D, got shape {tuple(weight.shape)}")
    if x.dtype not in _DTYPES:
        raise ValueError(f"{name}: dtype {x.dtype} not supported; use float32, float16 or bfloat16")
    for label, t in (("weight", weight), ("bias", bias), ("residual", residual), ("alpha", alpha), ("beta", beta)):
        if t is not None and t.dtype != x.dtype:
            raise ValueError(f"{name}: {label} dtype {t.dtype} differs from x dtype {x.dtype}; cast it first")
    if stride < 1 or dilation < 1 or padding < 0 or groups < 1:
        raise ValueError(f"{name}: need stride >= 1, dilation >= 1, padding >= 0, groups >= 1; got "
                         f"stride={stride} dilation={dilation} padding={padding} groups={groups}")
    if act not in ACTS:
        raise ValueError(f"{name}: act must be one of {ACTS}, got {act!r}")
    if act == "snake" and (alpha is None or alpha.numel() != x.shape[1]
                           or (beta is not None and beta.numel() != x.shape[1])):
        raise ValueError(f"{name}: snake needs alpha (and optional beta) with one value per input channel "
                         f"({x.shape[1]}), got alpha {None if alpha is None else tuple(alpha.shape)}")
    check_precision(precision)


def _launch(transposed, x, weight, bias, stride, padding, dilation, groups, output_padding, act, slope,
            alpha, beta, residual, scale, precision, out):
    name = "conv1d_transpose" if transposed else "conv1d"
    _check_args(name, x, weight, bias, residual, alpha, beta, act, stride, padding, dilation, groups, precision)
    x, weight = x.contiguous(), weight.contiguous()
    B, C_in, L_in = x.shape
    K = weight.shape[2]
    if transposed:
        C_out = weight.shape[1] * groups
        if weight.shape[0] != C_in or C_in % groups:
            raise ValueError(f"{name}: weight must be [C_in={C_in}, C_out/groups, K] with C_in divisible by "
                             f"groups={groups}, got {tuple(weight.shape)}")
        if not 0 <= output_padding < max(stride, dilation):
            raise ValueError(f"{name}: output_padding ({output_padding}) must be smaller than stride ({stride}) "
                             f"or dilation ({dilation})")
        L_out = conv1d_transpose_out_len(L_in, K, stride, padding, output_padding, dilation)
    else:
        C_out = weight.shape[0]
        if C_in % groups or C_out % groups or weight.shape[1] != C_in // groups:
            raise ValueError(f"{name}: weight must be [C_out, C_in/groups = {C_in // max(groups, 1)}, K] with "
                             f"C_in={C_in} and C_out divisible by groups={groups}, got {tuple(weight.shape)}")
        L_out = conv1d_out_len(L_in, K, stride, padding, dilation)
    if L_out < 1:
        raise ValueError(f"{name}: output length {L_out} < 1 for L={L_in}, K={K}, stride={stride}, "
                         f"padding={padding}, dilation={dilation}; the input is too short")
    C_in_g, C_out_g = C_in // groups, C_out // groups
    if out is None:
        out = x.new_empty(B, C_out, L_out)
    elif tuple(out.shape) != (B, C_out, L_out) or not out.is_contiguous():
        raise ValueError(f"{name}: out must be a contiguous {(B, C_out, L_out)} tensor, got {tuple(out.shape)}")
    if residual is not None:
        if tuple(residual.shape) != (B, C_out, L_out):
            raise ValueError(f"{name}: residual must have the output's shape {(B, C_out, L_out)}, "
                             f"got {tuple(residual.shape)}")
        residual = residual.contiguous()
    if B == 0 or C_out == 0:
        return out
    bias_arg = out if bias is None else bias.contiguous()
    res_arg = out if residual is None else residual
    a_arg = x if alpha is None else alpha.contiguous()
    b_arg = a_arg if beta is None else beta.contiguous()
    if transposed:
        step = stride // math.gcd(stride, dilation)
        taps = _cdiv(K, step)
    else:
        taps = K
    gemm = uses_gemm(C_in_g, C_out_g, taps)
    tap = gemm and uses_tap_kernel(x.dtype, precision, transposed, stride) and tap_kernel_fits(x, groups)
    # a residual keeps the per-phase form: with the interleaved epilogue's whole-tile residual, 128-row tiles spill
    interleave = (tap and transposed and residual is None
                  and uses_interleaved_phases(x.dtype, precision, C_in_g, K, stride, padding, dilation))
    # per phase without a residual: the phases into a phase-major scratch, then one interleaving pass
    phase_major = (tap and transposed and not interleave and residual is None
                   and _tap_class(x.dtype, precision) in PHASE_MAJOR_CLASSES)
    phase_pad, rows_g = 1, C_out_g
    fused = act != "none" or residual is not None
    if gemm:
        if interleave:  # one stride-1 conv over the union of the phases' shifts, phase_pad rows per channel
            phase_pad = triton.next_power_of_2(stride)
            rows_g = C_out_g * phase_pad
            phases, positions = 1, _cdiv(L_out, stride)
            base, taps = interleaved_shifts(K, stride, padding, dilation)
            in_step, tap_step, out_step = 1, 1, stride
        elif transposed:
            phases, positions = stride, _cdiv(L_out, stride)
            in_step, tap_step, base, out_step = 1, -(dilation // math.gcd(stride, dilation)), 0, stride
        else:
            phases, positions = 1, L_out
            in_step, tap_step, base, out_step = stride, dilation, -padding, 1
        if tap:
            if interleave:
                cfg = pick_interleaved_config(x.dtype, precision, taps * C_in_g, rows_g, positions, B * groups,
                                              fused, _sm_count(x.device))
            else:  # a phase-major epilogue (below) spills on 128×256 tiles, as a fused one does
                cfg = pick_tap_config(x.dtype, precision, C_out_g, positions, B * groups * phases,
                                      fused or phase_major,
                                      _sm_count(x.device))
            fused_cfg = cfg
        else:
            cfg = pick_gemm_config(x.dtype, precision, C_out_g, _cdiv(positions, 128) * B * groups * phases,
                                   _sm_count(x.device))
            fused_cfg = fused_input_config(cfg, x.dtype, precision) if act != "none" else cfg
        activations_per_input = taps * _cdiv(rows_g, fused_cfg.BLOCK_M)
    else:
        BLOCK_C, BLOCK_T = DIRECT_CONFIGS[0] if C_out >= DIRECT_CONFIGS[0][0] else DIRECT_CONFIGS[1]
        activations_per_input = K * C_out_g
    if act == "snake" and activations_per_input > SNAKE_FUSED_MAX_REPEATS:
        x, act = activation.snake(x, alpha, beta), "none"
    elif gemm:
        cfg = fused_cfg
    # FAST_SIN: the SFU sine on the GPU (the interpreter cannot run inline PTX)
    flags = dict(ACT=act, HAS_BIAS=bias is not None, HAS_RES=residual is not None, FAST_SIN=x.is_cuda)
    if tap:
        per_phase = transposed and not interleave
        tiles_n, n_tiles, persistent, pos_lo, pos_hi = _tap_geometry(
            per_phase, B, rows_g, groups, positions, phases, taps if interleave else K, stride, padding, dilation,
            tap_step, base, cfg,
            # never persistent with a fused or phase-major epilogue, nor on the wide interleaved tile (not measured)
            0 if fused or phase_major or cfg.BLOCK_N > TAP_FUSED_MAX_N and interleave
            else TAP_PERSISTENT[_tap_class(x.dtype, precision)],
            _sm_count(x.device))
        grid = (min(n_tiles, _sm_count(x.device)) if persistent else n_tiles,)
        if interleave:
            w_tap, _, U, C_in_pad = _packed_interleaved_weight(weight, groups, stride, padding, dilation,
                                                               cfg.BLOCK_K, phase_pad)
        else:
            w_tap, phase_base, U, C_in_pad = _packed_tap_weight(weight, transposed, groups, stride, padding,
                                                                dilation, cfg.BLOCK_K)
        if not per_phase:
            phase_base = _dummy_int(x.device)
        mode = tap_mode(x)
        device_desc = mode == "tma" and DEVICE_DESCRIPTORS
        x_shift, L_desc, x_rows, x_pitch = 0, L_in, 0, 0
        x_desc, w_desc = x, w_tap
        if mode == "tma":
            xt, x_shift = _x_time_major(x, pos_lo, pos_hi)
            L_desc, x_pitch = xt.shape[1], xt.shape[2]
            x_rows = B * L_desc
            if device_desc:
                x_desc = xt
                _use_tma_scratch()
            else:
                from triton.tools.tensor_descriptor import TensorDescriptor
                x_desc = TensorDescriptor(xt.reshape(x_rows, x_pitch), [x_rows, C_in], [x_pitch, 1],
                                          [cfg.BLOCK_N, cfg.BLOCK_K])
                w_desc = TensorDescriptor.from_tensor(w_tap, [cfg.BLOCK_M, cfg.BLOCK_K])
        upcast = _interpreted() and x.dtype == torch.bfloat16
        y_arg, y_len = out, L_out
        if phase_major:
            y_len = positions
            y_arg = torch.empty(B * C_out * phases * positions, dtype=out.dtype, device=out.device)
        _conv_tap_kernel[grid](
            x_desc, w_desc, x, w_tap, bias_arg, res_arg, y_arg, phase_base, a_arg, b_arg,
            C_in, L_desc, C_out, y_len, groups, C_in_g, rows_g, C_in_pad, U, phases,
            tap_step, base, out_step, x_shift, tiles_n, n_tiles, x_rows, x_pitch, float(slope), float(scale),
            TRANSPOSED=per_phase, UPCAST=upcast, PERSISTENT=persistent, DEVICE_DESC=device_desc,
            PHASE_PAD=phase_pad, DENSE=phase_pad == stride, ROW_ALIGN=_row_align(y_len, x.element_size()),
            PHASE_MAJOR=phase_major,
            PRECISION=dot_input(precision, torch.float32 if upcast else x.dtype, "ieee"), USE_TMA=mode == "tma",
            BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N, BLOCK_K=cfg.BLOCK_K,
            num_warps=cfg.num_warps, num_stages=cfg.num_stages, **flags)
        if phase_major:
            S_P = triton.next_power_of_2(phases)
            block_j = interleave_block(phases)
            _interleave_phases_kernel[(B * C_out, _cdiv(positions, block_j))](
                y_arg, out, positions, L_out, S=phases, S_P=S_P, BLOCK_J=block_j, num_warps=4)
    elif gemm:
        if transposed:
            w_arg, phase_base, U = _packed_transpose_weight(weight, groups, stride, padding, dilation)
        else:
            w_arg, phase_base, U = weight, _dummy_int(x.device), K
        grid = (phases * _cdiv(C_out_g, cfg.BLOCK_M) * _cdiv(positions, cfg.BLOCK_N), B * groups)
        upcast = _interpreted() and x.dtype == torch.bfloat16
        _conv_gemm_kernel[grid](
            x, w_arg, bias_arg, res_arg, out, phase_base, a_arg, b_arg,
            C_in, L_in, C_out, L_out, groups, C_in_g, C_out_g, C_in_g * U, U, phases,
            in_step, tap_step, base, out_step, float(slope), float(scale),
            TRANSPOSED=transposed, UPCAST=upcast,
            PRECISION=dot_input(precision, torch.float32 if upcast else x.dtype, "ieee"),
            PREFETCH=x.dtype != torch.float32,
            BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N, BLOCK_K=cfg.BLOCK_K,
            num_warps=cfg.num_warps, num_stages=cfg.num_stages, **flags)
    else:
        grid = (_cdiv(L_out, BLOCK_T), _cdiv(C_out, BLOCK_C), B)
        _conv_direct_kernel[grid](
            x, weight, bias_arg, res_arg, out, a_arg, b_arg,
            C_in, L_in, C_out, L_out, C_in_g, C_out_g, K, stride, padding, dilation, float(slope), float(scale),
            TRANSPOSED=transposed, BLOCK_C=BLOCK_C, BLOCK_T=BLOCK_T, num_warps=4, **flags)
    return out


def _batched(fn):
    """Accept PyTorch's unbatched [C, L] input as [1, C, L]."""
    def wrapper(x, weight, *args, residual=None, out=None, **kwargs):
        if x.dim() == 2:
            res = None if residual is None else residual.unsqueeze(0)
            o = None if out is None else out.unsqueeze(0)
            return fn(x.unsqueeze(0), weight, *args, residual=res, out=o, **kwargs).squeeze(0)
        return fn(x, weight, *args, residual=residual, out=out, **kwargs)
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


@_batched
def conv1d_fused(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act="none", slope=0.0,
                 alpha=None, beta=None, residual=None, scale=1.0, transposed=False, output_padding=0,
                 precision="ieee", out=None):
    """scale · (conv(act(x)) + bias + residual); conv is transposed when `transposed` (weight IOK)."""
    return _launch(transposed, x, weight, bias, stride, padding, dilation, groups, output_padding, act, slope,
                   alpha, beta, residual, scale, precision, out)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, precision="ieee", out=None):
    """torch.nn.functional.conv1d; `precision` ('ieee' | 'tf32x3' | 'tf32') applies to float32 storage."""
    return conv1d_fused(x, weight, bias, stride, padding, dilation, groups, precision=precision, out=out)


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     precision="ieee", out=None):
    """torch.nn.functional.conv_transpose1d (same argument order)."""
    return conv1d_fused(x, weight, bias, stride, padding, dilation, groups, transposed=True,
                        output_padding=output_padding, precision=precision, out=out)


def conv1d_transpose_depthwise(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1,
                               out=None):
    """Transposed conv with groups == channels, weight [C, 1, K]."""
    C = x.shape[-2]
    if tuple(weight.shape[:2]) != (C, 1):
        raise ValueError(f"conv1d_transpose_depthwise: weight must be [C={C}, 1, K], got {tuple(weight.shape)}")
    return conv1d_transpose(x, weight, bias, stride, padding, output_padding, C, dilation, out=out)


# ---------------------------------------------------------------------------------------------------
# PyTorch peers and float64 oracles
# ---------------------------------------------------------------------------------------------------
def activate_torch(x, act="none", slope=0.0, alpha=None, beta=None):
    if act == "leaky_relu":
        return F.leaky_relu(x, slope)
    if act == "snake":
        a = alpha.view(-1, 1)
        b = a if beta is None else beta.view(-1, 1)
        return x + torch.sin(a * x).pow(2) / (b + 1e-9)
    return x


def conv1d_fused_torch(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act="none",
                       slope=0.0, alpha=None, beta=None, residual=None, scale=1.0, transposed=False,
                       output_padding=0, **_):
    x = activate_torch(x, act, slope, alpha, beta)
    if transposed:
        y = F.conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation)
    else:
        y = F.conv1d(x, weight, bias, stride, padding, dilation, groups)
    if residual is not None:
        y = y + residual
    return y * scale if scale != 1.0 else y


def conv1d_oracle(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, **_):
    """Direct definition: per group and tap, a matrix product with the strided input window."""
    x, w = x.numpy(), weight.numpy()
    B, C_in, L = x.shape
    C_out, C_in_g, K = w.shape
    C_out_g = C_out // groups
    L_out = conv1d_out_len(L, K, stride, padding, dilation)
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    y = np.zeros((B, C_out, L_out))
    for g in range(groups):
        xg, og = xp[:, g * C_in_g:(g + 1) * C_in_g], slice(g * C_out_g, (g + 1) * C_out_g)
        for k in range(K):
            window = xg[:, :, k * dilation: k * dilation + stride * (L_out - 1) + 1: stride]
            y[:, og] += w[og, :, k] @ window
    if bias is not None:
        y += bias.numpy()[None, :, None]
    return torch.from_numpy(y)


def conv1d_transpose_oracle(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                            **_):
    """Scatter form (the definition): input i, tap k lands on i·s + k·d − p; crop to the output length."""
    x, w = x.numpy(), weight.numpy()
    B, C_in, L = x.shape
    _, C_out_g, K = w.shape
    C_in_g = C_in // groups
    L_out = conv1d_transpose_out_len(L, K, stride, padding, output_padding, dilation)
    full = np.zeros((B, C_out_g * groups, (L - 1) * stride + dilation * (K - 1) + 1 + output_padding))
    for g in range(groups):
        ig, og = slice(g * C_in_g, (g + 1) * C_in_g), slice(g * C_out_g, (g + 1) * C_out_g)
        for k in range(K):
            full[:, og, k * dilation: k * dilation + stride * (L - 1) + 1: stride] += w[ig, :, k].T @ x[:, ig]
    y = full[:, :, padding: padding + L_out]
    if bias is not None:
        y = y + bias.numpy()[None, :, None]
    return torch.from_numpy(np.ascontiguousarray(y))


def conv1d_fused_oracle(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act="none",
                        slope=0.0, alpha=None, beta=None, residual=None, scale=1.0, transposed=False,
                        output_padding=0, **_):
    xa = x.numpy()
    if act == "leaky_relu":
        xa = np.where(xa > 0, xa, slope * xa)
    elif act == "snake":
        a = alpha.numpy()[:, None]
        b = a if beta is None else beta.numpy()[:, None]
        xa = xa + np.sin(a * xa) ** 2 / (b + 1e-9)
    xa = torch.from_numpy(xa)
    if transposed:
        y = conv1d_transpose_oracle(xa, weight, bias, stride, padding, output_padding, groups, dilation)
    else:
        y = conv1d_oracle(xa, weight, bias, stride, padding, dilation, groups)
    if residual is not None:
        y = y + residual
    return y * scale


# ---------------------------------------------------------------------------------------------------
# registration: tests (small shapes on the interpreter, model shapes on the GPU), benches, AOT variants
# ---------------------------------------------------------------------------------------------------
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
            for transposed in forms:
                out += [_gemm_variant(dt, prec, cfg, transposed) for cfg in configs]
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
    name="conv1d", family="conv",
    doc="y[b,o,t] = bias[o] + sum_{c in group(o), k} W[o,c,k] x[b,c,t*s + k*d - p]; implicit GEMM (tl.dot)",
    make_inputs=lambda p, dt, dev, g: _with_groups_precision(p, _conv_inputs(p, dt, dev, g)),
    alloc_out=_alloc, launch=conv1d, oracle=conv1d_oracle,
    peer=F.conv1d,
    cases=CONV1D_CASES, bench=CONV1D_BENCH, tol_kind="reduction",
    variants=lambda: conv_variants((False,)),
))

register(Kernel(
    name="conv1d_transpose", family="conv",
    doc="y[b,o,t] = bias[o] + sum_{c,k,i: i*s + k*d - p = t} W[c,o,k] x[b,c,i]; gather form by output phase",
    make_inputs=lambda p, dt, dev, g: _with_groups_precision(p, _conv_inputs(p, dt, dev, g)),
    alloc_out=_alloc, launch=conv1d_transpose, oracle=conv1d_transpose_oracle,
    peer=F.conv_transpose1d,
    cases=CONV1D_TRANSPOSE_CASES, bench=CONV1D_TRANSPOSE_BENCH, tol_kind="reduction",
    variants=lambda: conv_variants((True,)),
))

register(Kernel(
    name="conv1d_transpose_depthwise", family="conv",
    doc="transposed conv with groups == channels, weight [C, 1, K]; matches PyTorch's output_padding edge",
    make_inputs=_conv_inputs, alloc_out=_alloc, launch=conv1d_transpose_depthwise,
    oracle=lambda x, weight, **kw: conv1d_transpose_oracle(x, weight, groups=x.shape[1], **kw),
    peer=lambda x, weight, **kw: F.conv_transpose1d(x, weight, groups=x.shape[1], **kw),
    cases=DEPTHWISE_TRANSPOSE_CASES, bench=DEPTHWISE_TRANSPOSE_BENCH, tol_kind="reduction",
    variants=lambda: [_direct_variant(dt, block, True) for dt in ("fp32", "fp16", "bf16")
                      for block in DIRECT_CONFIGS],
))

register(Kernel(
    name="conv1d_fused", family="conv",
    doc="y = scale * (conv(act(x)) + bias + residual), conv or transposed; act leaky_relu(slope) or "
        "snake(alpha_c, beta_c) applied as the input is loaded",
    make_inputs=_fused_inputs, alloc_out=_alloc, launch=conv1d_fused, oracle=conv1d_fused_oracle,
    peer=conv1d_fused_torch,
    cases=FUSED_CASES, bench=FUSED_BENCH, tol_kind="reduction",
    variants=lambda: [v for v in conv_variants(fused=True) if ",none" not in v.name],
))
