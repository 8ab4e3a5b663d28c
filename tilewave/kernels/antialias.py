"""Anti-aliased activation (BigVGAN's AMP blocks), fused: upsample x2 -> snake/snakebeta -> low-pass, stride 2.

act1d   y = Down(act(Up(x)))                     x, y [B, C, L] or [C, L]; alpha, beta [C]; filters f_u, f_d [K]

With K taps (K = 12 in BigVGAN; any K divisible by 4 here), pad = K/2 - 1 and edge-clamped (replicate) x:
  Up      u[n] = 2 * sum_j xr[j] * f_u[n + 3K/2 - 3 - 2j],  xr[j] = x[clamp(j - pad, 0, L - 1)],  n in [0, 2L)
          (replicate pad by `pad`, transposed depthwise conv stride 2, times 2, crop 3K/2 - 3 left: torch's UpSample1d)
  act     a[n] = u + sin(alpha_c u)^2 / (beta_c + 1e-9)   (snake: beta = alpha; log_scale: exp of both)
  Down    y[p] = sum_k f_d[k] * a[clamp(2p + k - pad, 0, 2L - 1)],  p in [0, L)
          (replicate pad (pad, pad + 1), depthwise conv stride 2: torch's DownSample1d / LowPassFilter1d)

Fused form (polyphase FMAs). Write n = 2q + r. The upsampled signal's two phases are K/2-tap filters of x,
  u[2q]     = sum_{i=-K/4}^{K/4-1} 2 f_u[CROP - 2(i + pad)] x[q + i]        (CROP = 3K/2 - 3)
  u[2q + 1] = sum_{i=-K/4+1}^{K/4} 2 f_u[CROP + 1 - 2(i + pad)] x[q + i]
and y[p] needs a[2q + r] for q in [p - K/4, p + K/4]. So each activated sample is computed once (two sines
per output) and both filters are K exact float32 FMAs per output: no tensor cores, no tf32.
A tile is ROWS x COLS half-rate positions of one (b, c) row: thread i holds tile row i, a run of COLS
consecutive positions, as COLS separate [ROWS] column tensors (a tuple). x is loaded in 16-byte chunks of VEC
columns per thread, which tl.split turns into columns without moving data; y's columns are joined back into
the tile and stored whole, with 16-byte vectors adjacent across the warp.
A shift along time is then a renaming of columns, except at a row's ends: the K/4 x columns and the K/2
activated columns beyond each end come from the neighbouring tile row by tl.gather, warp shuffles when the
tile is one warp. Rows 0 and ROWS - 1 have no neighbour inside the tile: they only feed their neighbours,
and tiles overlap by those two rows ((ROWS - 2) COLS outputs per tile; COLS >= K/2). A program runs ITERS
consecutive tiles of its row in a loop and loads the next tile's x before the current tile's arithmetic
(its memory latency hides behind it). The tile stays small on purpose: the fully unrolled tile is the loop
body, and 16- or 32-column tiles outgrow the instruction cache (benchmarks/RESULTS.md).
Sines are _common.sin: the SFU's sin.approx after a two-constant reduction to [-pi, pi] on the GPU (~1e-6
absolute for |alpha u| < 4e5), tl.sin in the interpreter.
Tiles that touch a row end replace x outside [0, L) by x[0] or x[L - 1] (replicate padding of x) and a
outside [0, 2L) by a[0] or a[2L - 1] (replicate padding of a); interior tiles skip both. HBM traffic: x
read once (plus the 2 / ROWS overlap, from L2), y written once.

Launch invariants: x contiguous; grid = rows * ceil(tiles / ITERS), one (b, c) row per program; x loads
are masked to [0, L), y stores to the tile's own rows; parameters and filters are float32 (the launcher
converts them); K <= 24; ROW_ALIGN divides L (it tells the compiler that rows start on 16-byte boundaries).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import check_channel_params, sin
from tilewave.kernels.activation import _snake_inputs
from tilewave.reference.antialias import TAPS, act1d_torch, resample_filter

# ---------------------------------------------------------------------------------------------------
# kernel
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _channel_params(a_ptr, b_ptr, c, HAS_BETA: tl.constexpr, LOG_SCALE: tl.constexpr):
    """(alpha, 1 / (beta + 1e-9)) of channel c (snake: beta = alpha; log_scale: exp of both)."""
    alpha = tl.load(a_ptr + c)
    if HAS_BETA:
        beta = tl.load(b_ptr + c)
    else:
        beta = alpha
    if LOG_SCALE:
        alpha = tl.exp(alpha)
        beta = tl.exp(beta)
    return alpha, 1.0 / (beta + 1e-9)


# ---------------------------------------------------------------------------------------------------
# polyphase kernel: exact float32 FMAs on the columns of a [ROWS, COLS] register tile
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _columns(t, COLS: tl.constexpr):
    """The COLS columns of a [R, COLS] tile (COLS a power of 2) as a tuple of [R] tensors, in order.
    A split halves the columns into even and odd ones; after level l slot s holds columns s + 2^l m."""
    cols = (t,)
    for level in tl.static_range(COLS):
        if (1 << level) < COLS:
            evens = ()
            odds = ()
            for s in tl.static_range(1 << level):
                e, o = tl.split(tl.reshape(cols[s], [t.shape[0], (COLS >> level) // 2, 2]))
                evens = evens + (e,)
                odds = odds + (o,)
            cols = evens + odds
    out = ()
    for s in tl.static_range(COLS):
        out = out + (tl.reshape(cols[s], [t.shape[0]]),)
    return out


@triton.jit
def _tile(cols, COLS: tl.constexpr):
    """Inverse of _columns: a tuple of COLS [R] tensors back into one [R, COLS] tile."""
    parts = ()
    for s in tl.static_range(COLS):
        parts = parts + (tl.reshape(cols[s], [cols[s].shape[0], 1]),)
    for level in tl.static_range(COLS):
        if (1 << level) < COLS:
            merged = ()
            for s in tl.static_range(COLS >> (level + 1)):
                j = tl.join(parts[s], parts[s + (COLS >> (level + 1))])
                merged = merged + (tl.reshape(j, [j.shape[0], 2 << level]),)
            parts = merged
    return parts[0]


@triton.jit
def _shifted(cols, prev, succ, COLS: tl.constexpr, HALO: tl.constexpr, AXIS: tl.constexpr):
    """Columns -HALO .. COLS + HALO - 1 of the tile's rows (along AXIS): the edges are the previous / next row's
    columns (warp shuffles when a warp holds the rows, a shared-memory round trip otherwise)."""
    out = ()
    for i in tl.static_range(HALO):
        out = out + (tl.gather(cols[COLS - HALO + i], prev, AXIS),)
    out = out + cols
    for i in tl.static_range(HALO):
        out = out + (tl.gather(cols[i], succ, AXIS),)
    return out


@triton.jit
def _load_chunks(x_row, t0, L, ROWS: tl.constexpr, COLS: tl.constexpr, VEC: tl.constexpr, ROW_ALIGN: tl.constexpr):
    """The tile's x as COLS / VEC [ROWS, VEC] chunks in x's dtype; positions outside [0, L) read as 0.
    L rounded down to ROW_ALIGN (a no-op, L % ROW_ALIGN == 0) tells the compiler the mask is constant over a
    chunk, so the masked loads stay 16-byte vectors."""
    L_aligned = (L // ROW_ALIGN) * ROW_ALIGN
    r_idx = tl.arange(0, ROWS)
    chunks = ()
    for v in tl.static_range(COLS // VEC):
        qv = t0 + (r_idx[:, None] - 1) * COLS + v * VEC + tl.arange(0, VEC)[None, :]
        chunks = chunks + (tl.load(x_row + qv, mask=(qv >= 0) & (qv < L_aligned), other=0.0),)
    return chunks


@triton.jit
def _replicate_ends(cols, q0, L, first, last, COLS: tl.constexpr):
    """Columns e of tile rows starting at positions q0 with positions before 0 replaced by `first` and from L on by
    `last` (replicate padding)."""
    out = ()
    for e in tl.static_range(COLS):
        qe = q0 + e
        out = out + (tl.where(qe < 0, first, tl.where(qe >= L, last, cols[e])),)
    return out


@triton.jit
def _up_activated(xs, up, alpha, inv_beta, zero, TAPS: tl.constexpr, COLS: tl.constexpr, FAST_SIN: tl.constexpr):
    """The two phases of the upsampled signal at each of the COLS columns, activated, from x's columns widened by
    HALO each side (xs): u[2q + r] meets x[q + (r + CROP - k) / 2 - PAD] (through tap k when r + CROP - k is even);
    `up` holds 2 f_u (the upsampler's gain). zero: a zero column, in the tile's shape."""
    HALO: tl.constexpr = TAPS // 4
    PAD: tl.constexpr = TAPS // 2 - 1
    CROP: tl.constexpr = 3 * TAPS // 2 - 3
    ae = ()
    ao = ()
    for e in tl.static_range(COLS):
        u_even = zero
        u_odd = zero
        for k in tl.static_range(TAPS):
            if (CROP - k) % 2 == 0:
                u_even += up[k] * xs[e + HALO + (CROP - k) // 2 - PAD]
            else:
                u_odd += up[k] * xs[e + HALO + (CROP + 1 - k) // 2 - PAD]
        ae = ae + (_snake_phase(u_even, alpha, inv_beta, FAST_SIN),)
        ao = ao + (_snake_phase(u_odd, alpha, inv_beta, FAST_SIN),)
    return ae, ao


@triton.jit
def _down(ae, ao, prev, succ, down, zero, TAPS: tl.constexpr, COLS: tl.constexpr, AXIS: tl.constexpr):
    """Down: y[p] = sum_k f_d[k] a[2p + k - PAD], from the activated phases ae, ao of each column. The activated
    signal a[2q + r] of each tile row as 2 COLS columns, widened by the neighbours' edges (2 HALO each side), so
    column 2e + k - PAD of the row is 2 HALO >= PAD + 1 further in."""
    HALO: tl.constexpr = TAPS // 4
    PAD: tl.constexpr = TAPS // 2 - 1
    a = ()
    for e in tl.static_range(COLS):
        a = a + (ae[e], ao[e])
    a = _shifted(a, prev, succ, 2 * COLS, 2 * HALO, AXIS)
    ys = ()
    for e in tl.static_range(COLS):
        acc = zero
        for k in tl.static_range(TAPS):
            acc += down[k] * a[2 * e + k - PAD + 2 * HALO]
        ys = ys + (acc,)
    return ys


@triton.jit
def _act1d_poly_tile(chunks, x_row, y_row, t0, L, L_aligned, up, down, alpha, inv_beta, TAPS: tl.constexpr,
                     ROWS: tl.constexpr, COLS: tl.constexpr, VEC: tl.constexpr, CLAMP: tl.constexpr,
                     FAST_SIN: tl.constexpr):
    HALO: tl.constexpr = TAPS // 4
    # tile row r holds half-rate positions q = t0 + (r - 1) COLS + e; rows 0 and ROWS - 1 only feed their
    # neighbours' edges (a row shift cannot reach past the tile), rows 1 .. ROWS - 2 are stored.
    # x comes in chunks of VEC columns, one 16-byte access per thread and chunk: a chunk's columns are then
    # registers of one thread, and splitting them moves no data
    r_idx = tl.arange(0, ROWS)
    xc = ()
    for v in tl.static_range(COLS // VEC):
        xc = xc + _columns(chunks[v].to(tl.float32), VEC)
    if CLAMP:
        # replicate padding of x: positions before 0 read x[0], after L - 1 read x[L - 1]
        x_first = tl.load(x_row).to(tl.float32)
        x_last = tl.load(x_row + (L - 1)).to(tl.float32)
        xc = _replicate_ends(xc, t0 + (r_idx - 1) * COLS, L, x_first, x_last, COLS)
    prev = tl.maximum(r_idx - 1, 0)
    succ = tl.minimum(r_idx + 1, ROWS - 1)
    xs = _shifted(xc, prev, succ, COLS, HALO, 0)
    zero = tl.zeros([ROWS], tl.float32)
    ae, ao = _up_activated(xs, up, alpha, inv_beta, zero, TAPS, COLS, FAST_SIN)
    if CLAMP:
        # replicate padding of the activated signal: a[n < 0] = a[0], a[n >= 2L] = a[2L - 1]
        first, last = _activated_ends(x_row, L, up, alpha, inv_beta, TAPS, FAST_SIN)
        ae = _replicate_ends(ae, t0 + (r_idx - 1) * COLS, L, first, last, COLS)
        ao = _replicate_ends(ao, t0 + (r_idx - 1) * COLS, L, first, last, COLS)
    ys = _down(ae, ao, prev, succ, down, zero, TAPS, COLS, 0)
    # The whole tile in one store, laid out by the compiler so that a warp's 16-byte vectors are adjacent (a
    # float32 row is two vectors; stored chunk by chunk they were rows apart). L_aligned (== L) says the mask is
    # constant over a vector: with `q < L` the stores become scalar, each a partial write of 32 sectors in L2
    # (benchmarks/RESULTS.md).
    q = t0 + (r_idx[:, None] - 1) * COLS + tl.arange(0, COLS)[None, :]
    keep = (r_idx[:, None] >= 1) & (r_idx[:, None] < ROWS - 1) & (q < L_aligned)
    tl.store(y_row + q, _tile(ys, COLS).to(y_row.dtype.element_ty), mask=keep)


@triton.jit(do_not_specialize=["C", "L", "n_groups"])  # one binary for every length (ROW_ALIGN says enough)
def _act1d_poly_kernel(x_ptr, a_ptr, b_ptr, fu_ptr, fd_ptr, y_ptr, C, L, n_groups,
                       HAS_BETA: tl.constexpr, LOG_SCALE: tl.constexpr, TAPS: tl.constexpr, ROWS: tl.constexpr,
                       COLS: tl.constexpr, VEC: tl.constexpr, ITERS: tl.constexpr, ROW_ALIGN: tl.constexpr,
                       FAST_SIN: tl.constexpr):
    # a program runs ITERS consecutive tiles of one row in a loop: its setup (parameters, taps) is paid once
    # and the loop body, one tile, stays small enough for the instruction cache
    OUT: tl.constexpr = (ROWS - 2) * COLS
    pid = tl.program_id(0)
    row = pid // n_groups
    first = (pid % n_groups) * ITERS
    alpha, inv_beta = _channel_params(a_ptr, b_ptr, row % C, HAS_BETA, LOG_SCALE)
    up = ()
    down = ()
    for k in tl.static_range(TAPS):
        up = up + (2.0 * tl.load(fu_ptr + k),)
        down = down + (tl.load(fd_ptr + k),)
    # ROW_ALIGN (the launcher's word: L % ROW_ALIGN == 0) lets a row start on a 16-byte boundary
    row_start = tl.multiple_of(row.to(tl.int64) * L, ROW_ALIGN)
    L_aligned = (L // ROW_ALIGN) * ROW_ALIGN
    x_row = x_ptr + row_start
    y_row = y_ptr + row_start
    # the next tile's x is loaded before this tile's arithmetic, so its memory latency hides behind it (after
    # the program's last tile the bound passed is 0: nothing is read)
    nxt = _load_chunks(x_row, first * OUT, L, ROWS, COLS, VEC, ROW_ALIGN)
    for i in range(ITERS):
        t0 = (first + i) * OUT
        cur = nxt
        nxt = _load_chunks(x_row, t0 + OUT, L * (i + 1 < ITERS), ROWS, COLS, VEC, ROW_ALIGN)
        if (t0 >= COLS) & (t0 + (ROWS - 1) * COLS <= L):
            _act1d_poly_tile(cur, x_row, y_row, t0, L, L_aligned, up, down, alpha, inv_beta, TAPS, ROWS, COLS, VEC,
                             False, FAST_SIN)
        elif t0 < L:
            _act1d_poly_tile(cur, x_row, y_row, t0, L, L_aligned, up, down, alpha, inv_beta, TAPS, ROWS, COLS, VEC,
                             True, FAST_SIN)


@triton.jit
def _snake_phase(u, alpha, inv_beta, FAST_SIN: tl.constexpr):
    s = sin(alpha * u, FAST_SIN)
    return u + inv_beta * (s * s)


@triton.jit
def _activated_ends(x_row, L, up, alpha, inv_beta, TAPS: tl.constexpr, FAST_SIN: tl.constexpr):
    """a[0] and a[2L - 1] as [1] tensors: the values that a is replicate-padded with (x clamped to its row)."""
    PAD: tl.constexpr = TAPS // 2 - 1
    CROP: tl.constexpr = 3 * TAPS // 2 - 3
    u_first = tl.zeros([1], tl.float32)
    u_last = tl.zeros([1], tl.float32)
    for k in tl.static_range(TAPS):
        if (CROP - k) % 2 == 0:  # even phase at q = 0
            i = tl.minimum(tl.maximum((CROP - k) // 2 - PAD, 0), L - 1)
            u_first += up[k] * tl.load(x_row + i).to(tl.float32)
        else:  # odd phase at q = L - 1
            i = tl.minimum(tl.maximum(L - 1 + (CROP + 1 - k) // 2 - PAD, 0), L - 1)
            u_last += up[k] * tl.load(x_row + i).to(tl.float32)
    return _snake_phase(u_first, alpha, inv_beta, FAST_SIN), _snake_phase(u_last, alpha, inv_beta, FAST_SIN)


# ---------------------------------------------------------------------------------------------------
# time-major form: CH channels per program (one warp each), y written as the conv tap kernel's input
# ---------------------------------------------------------------------------------------------------
# The same tile as above with a channel axis in front: tile tensors are [CH, ROWS], warp w holding channel w's
# rows, so the row-edge gathers stay warp shuffles and each thread runs the one-channel tile's code. The store is
# y[b, left + q, c]: CH channels of one position are adjacent in memory, and Triton converts the tile to that layout
# through shared memory, so y leaves in 16-byte vectors instead of the scattered 2-byte writes a one-channel
# program would make (16x the L2 write requests; see the store note in _act1d_poly_tile).
@triton.jit
def _columns_ch(t, COLS: tl.constexpr):
    """_columns for a [CH, R, COLS] tile: COLS [CH, R] tensors, in order."""
    cols = (t,)
    for level in tl.static_range(COLS):
        if (1 << level) < COLS:
            evens = ()
            odds = ()
            for s in tl.static_range(1 << level):
                e, o = tl.split(tl.reshape(cols[s], [t.shape[0], t.shape[1], (COLS >> level) // 2, 2]))
                evens = evens + (e,)
                odds = odds + (o,)
            cols = evens + odds
    out = ()
    for s in tl.static_range(COLS):
        out = out + (tl.reshape(cols[s], [t.shape[0], t.shape[1]]),)
    return out


@triton.jit
def _tile_ch(cols, COLS: tl.constexpr):
    """Inverse of _columns_ch: COLS [CH, R] tensors back into one [CH, R, COLS] tile."""
    parts = ()
    for s in tl.static_range(COLS):
        parts = parts + (tl.reshape(cols[s], [cols[s].shape[0], cols[s].shape[1], 1]),)
    for level in tl.static_range(COLS):
        if (1 << level) < COLS:
            merged = ()
            for s in tl.static_range(COLS >> (level + 1)):
                j = tl.join(parts[s], parts[s + (COLS >> (level + 1))])
                merged = merged + (tl.reshape(j, [j.shape[0], j.shape[1], 2 << level]),)
            parts = merged
    return parts[0]


@triton.jit
def _load_chunks_ch(x_rows, t0, L, ROWS: tl.constexpr, COLS: tl.constexpr, VEC: tl.constexpr,
                    ROW_ALIGN: tl.constexpr):
    """_load_chunks for CH rows of x at once (x_rows [CH] pointers): COLS / VEC [CH, ROWS, VEC] chunks."""
    L_aligned = (L // ROW_ALIGN) * ROW_ALIGN
    r_idx = tl.arange(0, ROWS)
    chunks = ()
    for v in tl.static_range(COLS // VEC):
        qv = t0 + (r_idx[:, None] - 1) * COLS + v * VEC + tl.arange(0, VEC)[None, :]
        chunks = chunks + (tl.load(x_rows[:, None, None] + qv[None, :, :],
                                   mask=((qv >= 0) & (qv < L_aligned))[None, :, :], other=0.0),)
    return chunks


@triton.jit
def _activated_ends_ch(x_rows, L, up, alpha, inv_beta, TAPS: tl.constexpr, FAST_SIN: tl.constexpr):
    """_activated_ends for CH rows: a[0] and a[2L - 1] of each as [CH, 1] tensors."""
    PAD: tl.constexpr = TAPS // 2 - 1
    CROP: tl.constexpr = 3 * TAPS // 2 - 3
    u_first = tl.zeros([x_rows.shape[0]], tl.float32)
    u_last = tl.zeros([x_rows.shape[0]], tl.float32)
    for k in tl.static_range(TAPS):
        if (CROP - k) % 2 == 0:
            i = tl.minimum(tl.maximum((CROP - k) // 2 - PAD, 0), L - 1)
            u_first += up[k] * tl.load(x_rows + i).to(tl.float32)
        else:
            i = tl.minimum(tl.maximum(L - 1 + (CROP + 1 - k) // 2 - PAD, 0), L - 1)
            u_last += up[k] * tl.load(x_rows + i).to(tl.float32)
    return (_snake_phase(u_first[:, None], alpha, inv_beta, FAST_SIN),
            _snake_phase(u_last[:, None], alpha, inv_beta, FAST_SIN))


# The one-channel tile's body with [CH, ROWS] columns (the comments there hold); only the store differs.
@triton.jit
def _act1d_time_major_tile(chunks, x_rows, y_ptr, c, c_real, row0, t0, L, L_aligned, pitch, up, down, alpha,
                           inv_beta, TAPS: tl.constexpr, CH: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr,
                           VEC: tl.constexpr, CLAMP: tl.constexpr, FAST_SIN: tl.constexpr,
                           PITCH_ALIGN: tl.constexpr):
    HALO: tl.constexpr = TAPS // 4
    r_idx = tl.arange(0, ROWS)
    q0 = (t0 + (r_idx - 1) * COLS)[None, :]
    xc = ()
    for v in tl.static_range(COLS // VEC):
        xc = xc + _columns_ch(chunks[v].to(tl.float32), VEC)
    if CLAMP:
        x_first = tl.load(x_rows).to(tl.float32)[:, None]
        x_last = tl.load(x_rows + (L - 1)).to(tl.float32)[:, None]
        xc = _replicate_ends(xc, q0, L, x_first, x_last, COLS)
    prev = tl.broadcast_to(tl.maximum(r_idx - 1, 0)[None, :], [CH, ROWS])
    succ = tl.broadcast_to(tl.minimum(r_idx + 1, ROWS - 1)[None, :], [CH, ROWS])
    xs = _shifted(xc, prev, succ, COLS, HALO, 1)
    zero = tl.zeros([CH, ROWS], tl.float32)
    ae, ao = _up_activated(xs, up, alpha, inv_beta, zero, TAPS, COLS, FAST_SIN)
    if CLAMP:
        first, last = _activated_ends_ch(x_rows, L, up, alpha, inv_beta, TAPS, FAST_SIN)
        ae = _replicate_ends(ae, q0, L, first, last, COLS)
        ao = _replicate_ends(ao, q0, L, first, last, COLS)
    ys = _down(ae, ao, prev, succ, down, zero, TAPS, COLS, 1)
    # position q of the program's channels: row (left + q) of the time-major input, its CH channels adjacent;
    # the channels past C (the pitch's padding) are written as zeros
    q = t0 + (r_idx[:, None] - 1) * COLS + tl.arange(0, COLS)[None, :]
    keep = (r_idx[:, None] >= 1) & (r_idx[:, None] < ROWS - 1) & (q < L_aligned)
    offs = tl.multiple_of((row0 + q) * pitch, [PITCH_ALIGN, PITCH_ALIGN])
    y = tl.where(c_real[:, None, None], _tile_ch(ys, COLS), 0.0)
    tl.store(y_ptr + offs[None, :, :] + c[:, None, None], y.to(y_ptr.dtype.element_ty), mask=keep[None, :, :])


@triton.jit(do_not_specialize=["C", "L", "n_groups", "n_cblk", "Lp", "left"])
def _act1d_time_major_kernel(x_ptr, a_ptr, b_ptr, fu_ptr, fd_ptr, y_ptr, C, L, n_groups, n_cblk, Lp, pitch, left,
                             HAS_BETA: tl.constexpr, LOG_SCALE: tl.constexpr, TAPS: tl.constexpr,
                             CH: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr, VEC: tl.constexpr,
                             ITERS: tl.constexpr, ROW_ALIGN: tl.constexpr, FAST_SIN: tl.constexpr,
                             PITCH_ALIGN: tl.constexpr, ZERO_ROWS: tl.constexpr):
    # y[b, left + t, c] = act1d(x)[b, c, t]; y's rows before `left` and from left + L are zeros, as are its
    # channels from C to pitch. grid B · n_cblk · n_groups (the groups of ITERS tiles fastest): channels
    # cb·CH .. cb·CH + CH of batch item b, one warp each. Channels past C compute on channel C - 1's row (in
    # bounds, unmasked loads) and store zeros. pitch % CH == 0 (the launcher's), so no store is masked by channel.
    OUT: tl.constexpr = (ROWS - 2) * COLS
    pid = tl.program_id(0)
    grp = pid % n_groups
    cb = (pid // n_groups) % n_cblk
    b = (pid // (n_groups * n_cblk)).to(tl.int64)
    first = grp * ITERS
    c = cb * CH + tl.arange(0, CH)
    c_real = c < C
    cc = tl.minimum(c, C - 1)
    alpha, inv_beta = _channel_params(a_ptr, b_ptr, cc, HAS_BETA, LOG_SCALE)
    alpha = alpha[:, None]
    inv_beta = inv_beta[:, None]
    up = ()
    down = ()
    for k in tl.static_range(TAPS):
        up = up + (2.0 * tl.load(fu_ptr + k),)
        down = down + (tl.load(fd_ptr + k),)
    L_aligned = (L // ROW_ALIGN) * ROW_ALIGN
    x_rows = x_ptr + tl.multiple_of((b * C + cc) * L, ROW_ALIGN)
    item = b * Lp  # y's first row of item b; its signal starts at row item + left
    nxt = _load_chunks_ch(x_rows, first * OUT, L, ROWS, COLS, VEC, ROW_ALIGN)
    for i in range(ITERS):
        t0 = (first + i) * OUT
        cur = nxt
        nxt = _load_chunks_ch(x_rows, t0 + OUT, L * (i + 1 < ITERS), ROWS, COLS, VEC, ROW_ALIGN)
        if (t0 >= COLS) & (t0 + (ROWS - 1) * COLS <= L):
            _act1d_time_major_tile(cur, x_rows, y_ptr, c, c_real, item + left, t0, L, L_aligned, pitch, up, down,
                                   alpha, inv_beta, TAPS, CH, ROWS, COLS, VEC, False, FAST_SIN, PITCH_ALIGN)
        elif t0 < L:
            _act1d_time_major_tile(cur, x_rows, y_ptr, c, c_real, item + left, t0, L, L_aligned, pitch, up, down,
                                   alpha, inv_beta, TAPS, CH, ROWS, COLS, VEC, True, FAST_SIN, PITCH_ALIGN)
    # the zero rows (the conv's padding): the first group writes those before the signal, the last those after it
    z = tl.arange(0, ZERO_ROWS)
    zeros = tl.zeros([CH, ZERO_ROWS], y_ptr.dtype.element_ty)
    lo = tl.where(grp == 0, 0, left)
    for r0 in range(lo, left, ZERO_ROWS):
        r = r0 + z
        tl.store(y_ptr + tl.multiple_of((item + r) * pitch, PITCH_ALIGN)[None, :] + c[:, None], zeros,
                 mask=(r < left)[None, :])
    hi = tl.where(grp == n_groups - 1, Lp, left + L)
    for r0 in range(left + L, hi, ZERO_ROWS):
        r = r0 + z
        tl.store(y_ptr + tl.multiple_of((item + r) * pitch, PITCH_ALIGN)[None, :] + c[:, None], zeros,
                 mask=(r < hi)[None, :])


# ---------------------------------------------------------------------------------------------------
# launcher (Triton path; tilewave.ops.resample decides when to call it)
# ---------------------------------------------------------------------------------------------------
def _taps(f: torch.Tensor) -> int:
    return f.numel()


def kernel_covers(x: torch.Tensor, up_filter: torch.Tensor, down_filter: torch.Tensor) -> bool:
    """The cases the Triton kernel handles: contiguous x, equal filter lengths divisible by 4, at most 24."""
    k = _taps(up_filter)
    return (x.is_contiguous() and x.dim() in (2, 3) and k == _taps(down_filter) and k % 4 == 0
            and 4 <= k <= 24)


def _check_args(x, alpha, beta, up_filter, down_filter):
    if not kernel_covers(x, up_filter, down_filter):
        raise ValueError(f"act1d: the kernel needs a contiguous [C, L] or [B, C, L] x and two filters of equal "
                         f"length divisible by 4 (4 to 24 taps); got x {tuple(x.shape)} strides {x.stride()}, "
                         f"filters {_taps(up_filter)} and {_taps(down_filter)} taps")
    check_channel_params("act1d", x.shape[-2], alpha, beta)


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1).to(torch.float32).contiguous()


def poly_launch_args(x: torch.Tensor, taps: int, rows: int, cols: int, iters: int, fast_sin: bool):
    """(grid, n_groups, constexprs) of the polyphase kernel for x, a tile of `rows` x `cols` half-rate
    positions and `iters` tiles per program."""
    L = x.shape[-1]
    cols = max(cols, triton.next_power_of_2(2 * (taps // 4)))  # a row's edges come from one neighbour only
    vec = min(cols, 16 // x.element_size())
    n_tiles = triton.cdiv(L, (rows - 2) * cols)
    iters = min(iters, n_tiles)
    n_groups = triton.cdiv(n_tiles, iters)
    const = dict(TAPS=taps, ROWS=rows, COLS=cols, VEC=vec, ITERS=iters, ROW_ALIGN=vec if L % vec == 0 else 1,
                 FAST_SIN=fast_sin)
    return (x.numel() // L * n_groups,), n_groups, const


def act1d_poly(x, alpha, beta=None, log_scale=False, up_filter=None, down_filter=None, out=None, rows=32,
               cols=8, num_warps=1, iters=4):
    """The polyphase kernel with an explicit tile (rows x cols half-rate positions, rows - 2 of them stored)."""
    up_filter = resample_filter(device=x.device) if up_filter is None else up_filter
    down_filter = resample_filter(device=x.device) if down_filter is None else down_filter
    _check_args(x, alpha, beta, up_filter, down_filter)
    out = torch.empty_like(x) if out is None else out
    if x.numel():
        grid, n_groups, const = poly_launch_args(x, _taps(up_filter), rows, cols, iters, x.is_cuda)
        a = _f32(alpha)
        _act1d_poly_kernel[grid](x, a, a if beta is None else _f32(beta), _f32(up_filter), _f32(down_filter), out,
                                 x.shape[-2], x.shape[-1], n_groups, HAS_BETA=beta is not None, LOG_SCALE=log_scale,
                                 num_warps=num_warps, num_stages=1, **const)
    return out


# The tile the launcher uses: 32 rows (one warp: row edges by shuffles) x 8 columns, 8 tiles per program, y
# stored a whole tile at a time: fewer tiles per program are slower at the large shape, more are slower at
# BigVGAN's short rows (benchmarks/RESULTS.md); each choice is a compiled variant.
TILE_ROWS, TILE_COLS, TILE_WARPS = 32, 8, 1
TILES_PER_PROGRAM = {torch.float32: 8, torch.float16: 8, torch.bfloat16: 8}


def act1d(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False,
          up_filter: torch.Tensor | None = None, down_filter: torch.Tensor | None = None,
          out: torch.Tensor | None = None) -> torch.Tensor:
    return act1d_poly(x, alpha, beta, log_scale, up_filter, down_filter, out, rows=TILE_ROWS, cols=TILE_COLS,
                      num_warps=TILE_WARPS, iters=TILES_PER_PROGRAM.get(x.dtype, 1))


# Channels per program of the time-major form (one warp each): 8 make a 16-byte vector of a 16-bit row.
TIME_MAJOR_CHANNELS = 8
TIME_MAJOR_ZERO_ROWS = 256  # padding rows zeroed per store: 8 elements a thread at 8 warps, one 16-byte vector


def time_major_launch_args(x: torch.Tensor, taps: int, pitch: int, rows: int, cols: int, iters: int,
                           fast_sin: bool, channels: int = TIME_MAJOR_CHANNELS):
    """(grid, n_groups, n_cblk, channels, constexprs) of _act1d_time_major_kernel: the polyphase kernel's tile and
    groups, `channels` per program where they divide the pitch (else the largest power of two that does)."""
    _, n_groups, const = poly_launch_args(x, taps, rows, cols, iters, fast_sin)
    ch = math.gcd(channels, pitch)
    n_cblk = pitch // ch
    const.update(CH=ch, PITCH_ALIGN=math.gcd(pitch, 16 // x.element_size()), ZERO_ROWS=TIME_MAJOR_ZERO_ROWS)
    return (x.shape[0] * n_cblk * n_groups,), n_groups, n_cblk, ch, const


def act1d_time_major(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None, log_scale: bool,
                     up_filter: torch.Tensor, down_filter: torch.Tensor, left: int, Lp: int, pitch: int,
                     out: torch.Tensor | None = None, rows: int = TILE_ROWS, cols: int = TILE_COLS,
                     iters: int | None = None, channels: int = TIME_MAJOR_CHANNELS) -> torch.Tensor:
    """act1d's output for x [B, C, L] written time-major: y [B, Lp, pitch], y[b, left + t, c] = act1d(...)[b, c, t],
    zeros elsewhere (rows before `left` and from left + L, channels from C to pitch): the input form of the conv tap
    kernel (kernels.conv.tap), made in the activation's own pass instead of a copy after it. Each value has
    act1d's bits (the same arithmetic in the same order)."""
    _check_args(x, alpha, beta, up_filter, down_filter)
    if x.dim() != 3:
        raise ValueError(f"act1d_time_major: x must be [B, C, L], got shape {tuple(x.shape)}")
    B, C, L = x.shape
    if left < 0 or Lp < left + L or pitch < C:
        raise ValueError(f"act1d_time_major: need 0 <= left, left + L <= Lp and C <= pitch; got left={left}, L={L}, "
                         f"Lp={Lp}, C={C}, pitch={pitch}")
    if out is None:
        out = x.new_empty(B, Lp, pitch)
    elif tuple(out.shape) != (B, Lp, pitch) or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError(f"act1d_time_major: out must be a contiguous {(B, Lp, pitch)} {x.dtype} tensor, got "
                         f"{tuple(out.shape)} {out.dtype}")
    if not (B and C and L):
        return out.zero_()
    iters = TILES_PER_PROGRAM.get(x.dtype, 1) if iters is None else iters
    grid, n_groups, n_cblk, ch, const = time_major_launch_args(x, _taps(up_filter), pitch, rows, cols, iters,
                                                               x.is_cuda, channels)
    a = _f32(alpha)
    _act1d_time_major_kernel[grid](x, a, a if beta is None else _f32(beta), _f32(up_filter), _f32(down_filter), out,
                                   C, L, n_groups, n_cblk, Lp, pitch, left, HAS_BETA=beta is not None,
                                   LOG_SCALE=log_scale, num_warps=ch, num_stages=1, **const)
    return out


# ---------------------------------------------------------------------------------------------------
# float64 oracle (the PyTorch peer, also the CPU path of tilewave.ops.resample: tilewave/reference/antialias.py)
# ---------------------------------------------------------------------------------------------------
def act1d_oracle(x, alpha, beta=None, log_scale=False, up_filter=None, down_filter=None):
    """float64 NumPy, literally: replicate-pad, scatter each input through the filter at stride 2, crop,
    snake, replicate-pad, filter and keep every second sample."""
    x = x.numpy()
    fu = (resample_filter().double() if up_filter is None else up_filter).numpy().reshape(-1)
    fd = (resample_filter().double() if down_filter is None else down_filter).numpy().reshape(-1)
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
    variants = []
    for dt, dtype in dtypes.items():
        x = torch.empty(1, 1, 1 << 20, dtype=dtype, device="meta")
        _, _, const = poly_launch_args(x, TAPS, TILE_ROWS, TILE_COLS, TILES_PER_PROGRAM[dtype], True)
        for hb in (False, True):
            for ls in (False, True):
                for align in (const["VEC"], 1):  # rows on 16-byte boundaries or not (L % VEC)
                    variants.append(AotVariant(
                        f"_act1d_poly_kernel[{dt},beta={hb},log={ls},ROW_ALIGN={align}]", _act1d_poly_kernel,
                        {"x_ptr": f"*{dt}", "a_ptr": "*fp32", "b_ptr": "*fp32", "fu_ptr": "*fp32", "fd_ptr": "*fp32",
                         "y_ptr": f"*{dt}", "C": "i32", "L": "i32", "n_groups": "i32"},
                        {**const, "HAS_BETA": hb, "LOG_SCALE": ls, "ROW_ALIGN": align},
                        num_warps=TILE_WARPS, num_stages=1))
        # the time-major form (snakebeta, log-scale: BigVGAN v2's), rows aligned or not, at a pitch of one program
        _, _, _, ch, tm = time_major_launch_args(x, TAPS, 48, TILE_ROWS, TILE_COLS, TILES_PER_PROGRAM[dtype], True)
        for align in (tm["VEC"], 1):
            variants.append(AotVariant(
                f"_act1d_time_major_kernel[{dt},ROW_ALIGN={align}]", _act1d_time_major_kernel,
                {"x_ptr": f"*{dt}", "a_ptr": "*fp32", "b_ptr": "*fp32", "fu_ptr": "*fp32", "fd_ptr": "*fp32",
                 "y_ptr": f"*{dt}", "C": "i32", "L": "i32", "n_groups": "i32", "n_cblk": "i32", "Lp": "i32",
                 "pitch": "i32", "left": "i32"},
                {**tm, "HAS_BETA": True, "LOG_SCALE": True, "ROW_ALIGN": align}, num_warps=ch, num_stages=1))
    return variants


register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="act1d", family="resample", used_by=("bigvgan",),
    doc="y = lowpass_stride2(snake(upsample2(x))): BigVGAN's anti-aliased activation in one pass",
    make_inputs=_act1d_inputs, alloc_out=lambda i: torch.empty_like(i["x"]), launch=act1d,
    oracle=act1d_oracle, peer=act1d_torch, cases=_ACT1D_CASES,
    bench=[_act1d_bench("BigVGAN v2 stage 1 AMP [1, 768, 3752]", (1, 768, 3752)),
           _act1d_bench("BigVGAN v2 last stage AMP [1, 24, 240128]", (1, 24, 240128)),
           _act1d_bench("seed decoder block 4 [1, 96, 59520]", (1, 96, 59520)),
           _act1d_bench("large [1, 128, 1048576]", (1, 128, 1 << 20))],
    variants=_act1d_variants,
))
