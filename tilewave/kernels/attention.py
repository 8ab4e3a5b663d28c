"""Softmax attention, flash style: one pass over the keys with an online softmax, nothing T x T in memory.

sdpa_bidirectional           o[b,h,i] = Σ_j softmax_j(scale·q_i·k_j) v_j over keys j with
                             key_padding_mask[b, j] True (no mask: every key).
                             q [B, H, Tq, D], k, v [B, H, Tk, D], key_padding_mask [B, Tk] bool.
sdpa_bidirectional_windowed  the same where query i sees only keys j in [seg_start[i], seg_start[i] + seg_len[i]).
                             q, k, v [B, H, T, D]; seg_start, seg_len [T] int32, shared by batch and heads.
                             Tokens are pre-permuted into window order (Qwen2.5-VL style), so a query block's
                             windows are few and adjacent: the kernel visits only the key blocks they span.
sdpa_rel_pos_conformer       score_ij = scale·((q_i + u_h)·k_j + (q_i + v_h)·rel_emb[dist_ij, h]),
                             dist_ij = clamp(j + rel_zero − i, 0, rel_len − 1), then softmax·V (Transformer-XL).
                             q [B, H, Tq, D], k, v [B, H_kv, Tk, D] (GQA: query head h reads KV head
                             h // (H / H_kv)); pos_bias_u, pos_bias_v [H, D]; rel_emb [rel_len, H, D]
                             (per query head; a [H, rel_len, D] tensor passes as .transpose(0, 1): only the
                             D stride must be 1). rel_zero is the row of rel_emb for relative offset j − i = 0;
                             the default rel_zero = Tq − 1 with rel_len = Tq + Tk − 1 covers every offset
                             from −(Tq − 1) to Tk − 1 unclamped (ESPnet's RelPositionalEncoding order).
sdpa_decode_sink             one query per (batch, head): o = Σ_j p_j v_j with p = softmax over the attended keys
                             plus a virtual key whose logit is sinks[h] (same units as scale·q·k) and whose value
                             is 0: the sink joins the max and the denominator only. q [B, H, D] (or [B, H, 1, D]),
                             KV cache [B, H_kv, T, D], sinks [H], optional cache_lens [B] int32 (keys [0, len)),
                             optional window W (keys [len − W, len)). Split-K (flash-decoding): the keys of
                             every (batch, KV head) are spread over `num_splits` programs, each handling up to 16
                             query heads of the GQA group with one tl.dot per key tile (so the cache is read once
                             per group); the partial (max, sum, accumulator) triples are then merged with the
                             sink by a second, combine launch (one program per head; on sm_90 a programmatic
                             dependent launch, whose start overlaps the split kernel), or in the same launch by
                             the split of a head tile that arrives last (an arrival counter per tile), where
                             that measured faster (_decode_plan: the float32 forms up to 8k keys).
                             A sink of -inf means no sink.

A query whose keys are all masked (padding, an empty window, an empty cache) outputs 0, not NaN.
Softmax runs in the log2 domain (scale·log2 e folded into the scores, exp2); accumulation is float32 for
every storage dtype (float32, float16, bfloat16). tl.dot takes the storage dtype's operands; float32 storage
passes input_precision explicitly, taken by the ops from tilewave.precision.current(): 'ieee' (exact, FMA units),
'tf32x3' (high and low tf32 parts, three tensor-core MMAs: float32-class error) or 'tf32' (~1e-3).
PyTorch's float32 F.scaled_dot_product_attention on sm_80+ runs the memory-efficient CUTLASS kernel, whose
float32 GEMMs are 3xTF32 (mem_eff_attention/gemm_kernel_utils.h: DefaultGemmType<sm80+, float> uses
OpMultiplyAddFastF32) whatever torch.backends.cuda.matmul.allow_tf32 says: tf32x3 is the like-for-like peer.
Launch invariants: the last (D) dimension of every tensor is contiguous (other strides are free); D <= 128
(D is padded inside the block and masked: to 64 or 128 on the GPU, so D = 80 runs in a 128-wide block);
every tl.dot dimension is >= 16.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import hopper_or_newer, randn
from tilewave.precision import dot_input, tile_class

LOG2E = 1.4426950408889634
MAX_HEAD_DIM = 128
GPU_HEAD_BLOCKS = (64, 128)  # D <= 64 pads to 64 on the GPU (D = 16/32 heads are rare; fewer compiled forms)
COMBINE_BLOCK_S = 32  # splits merged per step of the separate decode combine pass
# Warps of the separate combine. H200 (benchmarks/diag_decode.py combine_warps, 32k keys, fp16 / bf16): one warp
# per (batch, head), h64 23.3 / 23.6 µs a call (2 warps 24.1 / 24.2, 4 warps 24.3 / 24.5; the 4-warp [1, splits]
# form it replaced 24.4), h128 39.2 / 39.0 (2 warps 39.8 / 39.9, 4 warps 39.4 / 39.1).
COMBINE_WARPS = 1
_KPM_SCAN: tl.constexpr = tl.constexpr(1024)  # key-padding mask bytes a forward program scans per step
# The fused decode merge (the last split of a head tile folds every split's partials): (head rows at a time,
# partial elements a step, pipeline stages). Heads go in slices of 8 rows, so a GQA group of 8
# does not merge its tile's 8 padding rows; the steps' loads go through Triton's cp.async pipeline, stages - 1
# steps in flight. H200 (tune_attn3): 8-row pipelined forms against this 16-row, 2-split, unpipelined merge:
# 4k h64 float32 tf32x3 (64, 8, 2) with q in the loop 25.7 µs (8, 1024, 8) against 20.5 (round 2; round 1,
# q before the loop: 20.5 against 20.9); fp16 (128, 8, 3) 16.5 against 16.1; more splits a step or more in
# flight lost (a step's reductions cross threads through shared memory). A form with every split of a column in
# one thread (no shared memory in the reductions) measured slower still at 32k keys h64 fp16 (session 4,
# benchmarks/RESULTS.md: 31.0-34.4 µs against 23.4 separate) and was removed.
_DEC_MERGE = (16, 2048, 1)

# (BLOCK_M, BLOCK_N, num_warps, num_stages). The CPU interpreter runs one program at a time, so its tiles
# are the smallest that tl.dot accepts on the GPU too (16). GPU tiles, per dot form (16-bit operands,
# tf32, tf32x3 = three tf32 MMAs per product, or exact float32 'ieee' which runs on FMA units and needs
# far more registers), are the largest that compile for sm_90 without register spills at head dim 128.
_FWD_CPU = (16, 16, 4, 1)
# tf32x3 holds high and low tf32 parts of each operand: at head block 128 only 16-row tiles fit without
# spills, so its entry is per head block. Measured on the H200 (benchmarks/tune_attn.py): 16-bit 128-row
# tiles with 8 warps gain < 1% even at [4, 16, 4096, 128] and lose at the model shapes.
# Exact float32 at head block 128: with its strides known multiples of 16 (as launched at the model shapes: the
# build gate compiles that form since session 4) the 4-warp (32, 16) tile spills 424 B; 8 warps do not (H200,
# benchmarks/check_session4.py, [1, 16, 1024, 128]: 1392 µs against 1372 spilling, (16, 16, 4, 1) 1423).
_FWD_GPU = {"16bit": (64, 64, 4, 3), "tf32": (64, 32, 4, 2), "tf32x3": {64: (32, 32, 4, 2), 128: (16, 32, 4, 2)},
            "ieee": {64: (32, 16, 4, 1), 128: (32, 16, 8, 1)}}
# with a key-padding mask (its scan takes registers): the tf32x3 tiles that do not spill
_FWD_GPU_KPM = {"tf32x3": {64: (64, 32, 4, 2), 128: (16, 16, 4, 2)}}
# The relative-position kernel also holds a [BLOCK, 2·BLOCK] window of rel_emb per key block: (BLOCK, warps, stages).
_REL_CPU = (16, 4, 1)
_REL_SPLIT_D_FORMS = ("tf32x3",)
_REL_GPU = {"16bit": (32, 4, 3), "tf32": (32, 4, 2), "tf32x3": {64: (32, 4, 2), 128: (32, 8, 2)}, "ieee": (16, 8, 1)}
# Decode: (BLOCK_N, num_warps, num_stages); programs per SM the split heuristic aims for.
_DEC_CPU = (16, 4, 1)
# The key loop is latency-bound per step (load, two small dots, two row reductions), so key blocks are
# as large as fit without spills (H200, CUDA-graph device times, benchmarks/tune_attn.py).
_DEC_GPU = {"16bit": {64: (128, 8, 3), 128: (128, 8, 2)}, "tf32": (64, 8, 2),
            "tf32x3": {64: (64, 8, 2), 128: (32, 8, 2)}, "ieee": (32, 8, 2)}
DECODE_BLOCK_G = 16  # query heads per decode tile: a GQA group of <= 16 in one tile, larger groups in several
_DEC_PROGRAMS_PER_SM = 2


class _DecodePlan(NamedTuple):
    config: tuple[int, int, int]  # (BLOCK_N, num_warps, num_stages)
    fused: bool  # the last split of a head tile merges (else the separate combine launch)
    merge: tuple[int, int, int]  # the fused merge's (rows, elements a step, stages)
    q_in_loop: bool  # see DECODE_Q_IN_LOOP
    programs_per_sm: int = _DEC_PROGRAMS_PER_SM  # the split count fills the GPU to this


# Long caches (more than _DEC_FUSED_MAX_KEYS keys) by dot form and head block; a form not listed takes its
# _DEC_GPU config and the separate combine. Session 3's sweep (time_cuda without host time) put 4 warps ahead of
# 8 at 32k keys in 16-bit with the separate combine: h64 (128, 4, 3) 25.8 µs against (128, 8, 3) 26.3, h128
# (64, 4, 3) 40.8 against (128, 8, 2) 42.4, at 2 programs per SM.
# float32 caches (session 4, benchmarks/diag_decode.py fp32_long, 32k keys, separate combine): 4 warps against the
# 8 of _DEC_GPU, tf32x3 h64 (64, 4, 3) 51.3 µs against (64, 8, 2) 95.0, h128 (32, 4, 3) 108.5 against (32, 8, 2)
# 202.0; exact float32 ('ieee') at 3 programs per SM, h64 (32, 4, 3) 174.3 against 208.0, h128 (32, 4, 2) 343.4
# against 377.9. Plain tf32 takes tf32x3's tiles (its _DEC_GPU (64, 8, 2) spills at h64 as launched): h64 38.3
# µs against 48.0, h128 70.4 against 71.9 (benchmarks/check_session4.py).
_DEC_GPU_LONG = {"16bit": {64: _DecodePlan((128, 4, 3), False, _DEC_MERGE, False),
                           128: _DecodePlan((64, 4, 3), False, _DEC_MERGE, False)},
                 "tf32x3": {64: _DecodePlan((64, 4, 3), False, _DEC_MERGE, True),
                            128: _DecodePlan((32, 4, 3), False, _DEC_MERGE, True)},
                 "tf32": {64: _DecodePlan((64, 4, 3), False, _DEC_MERGE, True),
                          128: _DecodePlan((32, 4, 3), False, _DEC_MERGE, True)},
                 "ieee": {64: _DecodePlan((32, 4, 3), False, _DEC_MERGE, True, 3),
                          128: _DecodePlan((32, 4, 2), False, _DEC_MERGE, True, 3)}}
# The last split of a head tile merging (one launch) against a second, combine launch, measured on the H200:
# with host time in the timing (session 2) the launch saved won at 4k keys (23 against 36 µs a call); at 32k
# keys the fused merge costs more device time than the combine kernel: one program merges every split of
# its tile in dependent steps (tune_attn3 round 1, h64 fp16: 24.5 µs separate, 28.9-40.0 fused at 32 splits,
# 26.1 at 16). So fused up to this many keys per (batch, KV head), where the form is not in _DEC_SHORT_SEPARATE:
_DEC_FUSED_MAX_KEYS = 8192
# Forms that take the separate combine at short caches too: with time_cuda no longer charging host time, the
# separate combine as a programmatic dependent launch measured faster at 4k keys in 16-bit (H200,
# benchmarks/tune_attn3.py, h64 fp16: 11.6 µs against 16.0 fused in round 1, 11.5 against 16.1 in round 2).
_DEC_SHORT_SEPARATE = ("16bit",)
DECODE_PDL = True  # the separate combine as a programmatic dependent launch (sm_90+)
# q loaded inside the key loop (a mask that depends on the loop index keeps it there): Triton's pipeliner then
# fetches it with the first K/V tiles. Loaded before the loop, q went to shared memory for the dot, and the
# K/V prologue's cp.async waited behind that store for q's DRAM round trip (sm_90 SASS: LDG q, STS, then the
# first LDGSTS). The plan's choice unless this is True/False (benchmarks).
DECODE_Q_IN_LOOP = None
# H200 (tune_attn3 round 2): no gain for the separate combine in 16-bit (32k h64 24.3 µs against 24.0 before the
# loop, h128 39.4 against 39.1), 0.7 µs for fused float32 (4k h64 tf32x3 20.5 against 21.2). By dot form:
_DEC_Q_IN_LOOP = {"16bit": False, "tf32": True, "tf32x3": True, "ieee": True}
_DEC_CPU_PROGRAMS = 16  # enough splits on the interpreter that tests cross split boundaries


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _softmax_start(M: tl.constexpr, BLOCK_D: tl.constexpr):
    # (running max, running sum, accumulator) before any key
    return (tl.full([M], float("-inf"), tl.float32), tl.zeros([M], tl.float32),
            tl.zeros([M, BLOCK_D], tl.float32))


@triton.jit
def _online_softmax_step(s, m_i, l_i, acc, v, PRECISION: tl.constexpr):
    # s: [M, N] scores in the log2 domain, -inf where masked. A row with no finite score so far keeps
    # m = -inf; subtracting a 0 instead of -inf keeps exp2 at 0 rather than NaN (inf - inf).
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m_i - m_safe)
    p = tl.exp2(s - m_safe[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return m_new, l_i, acc


@triton.jit
def _online_softmax_step_unmasked(s_raw, qk_scale, m_i, l_i, acc, v, PRECISION: tl.constexpr):
    # Every score finite and qk_scale > 0: max(s)·scale is the scaled max, so the scale folds into one FMA
    # per score (s·scale − m) and the running max never stays -inf.
    m_new = tl.maximum(m_i, tl.max(s_raw, 1) * qk_scale)
    p = tl.exp2(s_raw * qk_scale - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return m_new, l_i, acc


@triton.jit
def _load_rows(base, rows, stride, d, row_ok, d_ok):
    # [rows, BLOCK_D] tile of a [T, D] matrix with unit D stride; masked rows and padded dims read 0.
    return tl.load(base + rows[:, None] * stride + d[None, :], mask=row_ok[:, None] & d_ok[None, :], other=0.0)


@triton.jit
def _store_normalized(base, rows, stride, d, row_ok, d_ok, acc, l_i):
    # Rows that saw no key have l = 0 and acc = 0: they output 0.
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(base + rows[:, None] * stride + d[None, :], out.to(base.dtype.element_ty),
             mask=row_ok[:, None] & d_ok[None, :])


@triton.jit
def _sdpa_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, kpm_ptr, seg_start_ptr, seg_len_ptr,
                     sqb, sqh, sqt, skb, skh, skt, svb, svh, svt, sob, soh, sot, skpm,
                     H, Tq, Tk, D, qk_scale,
                     HAS_KPM: tl.constexpr, WINDOWED: tl.constexpr, EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    # grid: (cdiv(Tq, BLOCK_M), B*H); one block of queries of one (batch, head) per program.
    # EVEN_K (no mask, Tk a multiple of BLOCK_N, scale > 0): no score select, and the scale folds into the
    # exp2's FMA. On the tensor-core forms the softmax's elementwise work costs as much as the two dots, so
    # this is worth a compiled form.
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    d = tl.arange(0, BLOCK_D)
    row_ok = rows < Tq
    d_ok = d < D
    q = _load_rows(q_ptr + b * sqb + h * sqh, rows, sqt, d, row_ok, d_ok)
    k_base = k_ptr + b * skb + h * skh
    v_base = v_ptr + b * svb + h * svh

    if WINDOWED:
        seg_lo = tl.load(seg_start_ptr + rows, mask=row_ok, other=0)
        seg_hi = seg_lo + tl.load(seg_len_ptr + rows, mask=row_ok, other=0)
        live = row_ok & (seg_hi > seg_lo)
        lo = tl.maximum(tl.min(tl.where(live, seg_lo, Tk), 0), 0)
        hi = tl.minimum(tl.max(tl.where(live, seg_hi, 0), 0), Tk)
        lo = (lo // BLOCK_N) * BLOCK_N
    elif HAS_KPM:
        # visit only the key blocks from the first to the last attended key of this sequence: a padded
        # ragged batch skips its padding (one pass over the mask bytes, _KPM_SCAN at a time)
        lo = Tk
        hi = 0
        for c0 in range(0, Tk, _KPM_SCAN):
            kk = c0 + tl.arange(0, _KPM_SCAN)
            keep = tl.load(kpm_ptr + b * skpm + kk, mask=kk < Tk, other=0) != 0
            lo = tl.minimum(lo, tl.min(tl.where(keep, kk, Tk), 0))
            hi = tl.maximum(hi, tl.max(tl.where(keep, kk + 1, 0), 0))
        lo = (lo // BLOCK_N) * BLOCK_N
    else:
        lo = 0
        hi = Tk

    m_i, l_i, acc = _softmax_start(BLOCK_M, BLOCK_D)
    for start in range(lo, hi, BLOCK_N):
        keys = start + cols
        key_ok = keys < Tk
        k = _load_rows(k_base, keys, skt, d, key_ok, d_ok)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION)
        v = _load_rows(v_base, keys, svt, d, key_ok, d_ok)
        if EVEN_K:
            m_i, l_i, acc = _online_softmax_step_unmasked(s, qk_scale, m_i, l_i, acc, v, PRECISION)
        else:
            valid = key_ok[None, :]
            if HAS_KPM:
                keep = tl.load(kpm_ptr + b * skpm + keys, mask=key_ok, other=0)
                valid = valid & (keep != 0)[None, :]
            if WINDOWED:
                valid = valid & (keys[None, :] >= seg_lo[:, None]) & (keys[None, :] < seg_hi[:, None])
            s = tl.where(valid, s * qk_scale, float("-inf"))
            m_i, l_i, acc = _online_softmax_step(s, m_i, l_i, acc, v, PRECISION)
    _store_normalized(o_ptr + b * sob + h * soh, rows, sot, d, row_ok, d_ok, acc, l_i)


@triton.jit
def _biased_queries(q_base, rows, sqt, d, row_ok, d_ok, bias_u_ptr, bias_v_ptr):
    # (q + u_h, q + v_h) in q's dtype for the columns d
    q = _load_rows(q_base, rows, sqt, d, row_ok, d_ok)
    bias_u = tl.load(bias_u_ptr + d, mask=d_ok, other=0.0).to(tl.float32)
    bias_v = tl.load(bias_v_ptr + d, mask=d_ok, other=0.0).to(tl.float32)
    return (q.to(tl.float32) + bias_u[None, :]).to(q.dtype), (q.to(tl.float32) + bias_v[None, :]).to(q.dtype)


@triton.jit
def _dot_halves(a0, a1, base, rows, stride, dh, row_ok, d0_ok, d1_ok, DH: tl.constexpr, PRECISION: tl.constexpr):
    # a·B^T for B = rows of a [T, D] matrix, as two products over the halves [0, DH) and [DH, 2·DH) of D:
    # each B half is loaded just before its product, so only half of B is live at a time
    b0 = _load_rows(base, rows, stride, dh, row_ok, d0_ok)
    out = tl.dot(a0, tl.trans(b0), input_precision=PRECISION)
    b1 = _load_rows(base + DH, rows, stride, dh, row_ok, d1_ok)
    return tl.dot(a1, tl.trans(b1), out, input_precision=PRECISION)


@triton.jit
def _sdpa_rel_pos_kernel(q_ptr, k_ptr, v_ptr, o_ptr, rel_ptr, bias_u_ptr, bias_v_ptr,
                         sqb, sqh, sqt, skb, skh, skt, svb, svh, svt, sob, soh, sot, srr, srh,
                         H, GROUP, Tq, Tk, D, rel_len, rel_zero, qk_scale,
                         BLOCK: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr,
                         SPLIT_D: tl.constexpr):
    # SPLIT_D: the score products go over the two halves of D (_dot_halves), which keeps the tf32x3 form
    # (high and low parts of every operand) within the registers at 32-row tiles.
    # grid: (cdiv(Tq, BLOCK), B*H). For a BLOCK x BLOCK tile the offsets j - i span 2·BLOCK - 1 values, so
    # one [BLOCK, 2·BLOCK] product (q + v_h)·rel_emb[window]^T holds every positional score of the tile;
    # tl.gather then picks column (j - n0) - (i - m0) + BLOCK - 1 for element (i, j). Clamping the window's
    # rows to [0, rel_len) is the same as clamping each dist.
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    hk = h // GROUP
    m0 = pid_m * BLOCK
    rows = m0 + tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    d = tl.arange(0, BLOCK_D)
    win = tl.arange(0, 2 * BLOCK)
    row_ok = rows < Tq
    d_ok = d < D
    q_base = q_ptr + b * sqb + h * sqh
    if SPLIT_D:
        DH: tl.constexpr = BLOCK_D // 2
        dh = tl.arange(0, DH)
        d0_ok = dh < D
        d1_ok = dh + DH < D
        q_u0, q_v0 = _biased_queries(q_base, rows, sqt, dh, row_ok, d0_ok, bias_u_ptr + h * D, bias_v_ptr + h * D)
        q_u1, q_v1 = _biased_queries(q_base + DH, rows, sqt, dh, row_ok, d1_ok, bias_u_ptr + h * D + DH,
                                     bias_v_ptr + h * D + DH)
    else:
        q_u, q_v = _biased_queries(q_base, rows, sqt, d, row_ok, d_ok, bias_u_ptr + h * D, bias_v_ptr + h * D)
    k_base = k_ptr + b * skb + hk * skh
    v_base = v_ptr + b * svb + hk * svh
    rel_base = rel_ptr + h * srh
    pick = cols[None, :] - tl.arange(0, BLOCK)[:, None] + (BLOCK - 1)

    m_i, l_i, acc = _softmax_start(BLOCK, BLOCK_D)
    for start in range(0, Tk, BLOCK):
        keys = start + cols
        key_ok = keys < Tk
        rel_rows = tl.minimum(tl.maximum(start - m0 - (BLOCK - 1) + rel_zero + win, 0), rel_len - 1).to(tl.int64)
        if SPLIT_D:
            content = _dot_halves(q_u0, q_u1, k_base, keys, skt, dh, key_ok, d0_ok, d1_ok, DH, PRECISION)
            pos = _dot_halves(q_v0, q_v1, rel_base, rel_rows, srr, dh, rel_rows >= 0, d0_ok, d1_ok, DH, PRECISION)
        else:
            content = tl.dot(q_u, tl.trans(_load_rows(k_base, keys, skt, d, key_ok, d_ok)), input_precision=PRECISION)
            rel = _load_rows(rel_base, rel_rows, srr, d, rel_rows >= 0, d_ok)
            pos = tl.dot(q_v, tl.trans(rel), input_precision=PRECISION)
        s = tl.where(key_ok[None, :], (content + tl.gather(pos, pick, 1)) * qk_scale, float("-inf"))
        v = _load_rows(v_base, keys, svt, d, key_ok, d_ok)
        m_i, l_i, acc = _online_softmax_step(s, m_i, l_i, acc, v, PRECISION)
    _store_normalized(o_ptr + b * sob + h * soh, rows, sot, d, row_ok, d_ok, acc, l_i)


@triton.jit
def _merge_splits(part_ptr, sink_ptr, heads, g_ok, d, d_ok, parts_per_head, first_part, num_splits, D,
                  acc_off, m_off, l_off, ROWS: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
                  STAGES: tl.constexpr = 1):
    # The fused merge (the last split program of a head tile): folds the splits' (max, sum, acc) triples of the
    # heads `heads` [G] into normalized outputs [G, BLOCK_D], starting from the sink (max = sink, sum = exp2(0) =
    # 1, value 0); a -inf sink means no sink. Partials of head h, split s sit at row first_part +
    # h·parts_per_head + s. Loads bypass L1 (.cg): other programs wrote them during this launch.
    m = tl.load(sink_ptr + heads, mask=g_ok, other=float("-inf")).to(tl.float32) * 1.4426950408889634
    l = (m > float("-inf")).to(tl.float32)
    acc = tl.zeros([ROWS, BLOCK_D], tl.float32)
    for s0 in tl.range(0, num_splits, BLOCK_S, num_stages=STAGES):
        sp = s0 + tl.arange(0, BLOCK_S)
        ok = g_ok[:, None] & (sp < num_splits)[None, :]
        row = first_part + heads[:, None] * parts_per_head + sp[None, :]
        m_s = tl.load(part_ptr + m_off + row, mask=ok, other=float("-inf"), cache_modifier=".cg")
        l_s = tl.load(part_ptr + l_off + row, mask=ok, other=0.0, cache_modifier=".cg")
        # the (head, split) pairs as the rows of one 2D tile: a 3D load takes ~twice the registers
        pairs = tl.reshape(row, [ROWS * BLOCK_S])
        a_s = tl.load(part_ptr + acc_off + pairs[:, None] * D + d[None, :],
                      mask=tl.reshape(ok, [ROWS * BLOCK_S])[:, None] & d_ok[None, :], other=0.0, cache_modifier=".cg")
        m_new = tl.maximum(m, tl.max(m_s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m - m_safe)
        w = tl.exp2(m_s - m_safe[:, None])
        l = l * alpha + tl.sum(l_s * w, 1)
        weighted = a_s * tl.reshape(w, [ROWS * BLOCK_S])[:, None]
        acc = acc * alpha[:, None] + tl.sum(tl.reshape(weighted, [ROWS, BLOCK_S, BLOCK_D]), 1)
        m = m_new
    return acc / tl.where(l == 0.0, 1.0, l)[:, None]


@triton.jit
def _decode_split_kernel(q_ptr, k_ptr, v_ptr, lens_ptr, sink_ptr, o_ptr, part_ptr, counter_ptr,
                         sqb, sqh, skb, skh, skt, svb, svh, svt, sob, soh,
                         B, H, H_kv, GROUP, G_TILES, T, D, window, chunk, num_splits, qk_scale,
                         HAS_LENS: tl.constexpr, FUSED_COMBINE: tl.constexpr, BLOCK_G: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_S: tl.constexpr,
                         PRECISION: tl.constexpr, PDL: tl.constexpr, MERGE_G: tl.constexpr, MERGE_STAGES: tl.constexpr,
                         Q_IN_LOOP: tl.constexpr):
    # grid: (B*H_kv*G_TILES, num_splits). Rows of the tile are query heads of one GQA group (padded to
    # BLOCK_G >= 16 for tl.dot), so each K/V tile is read once for up to BLOCK_G heads.
    # part_ptr: float32 partials of [B·H, num_splits] rows: acc [.., D], then max, then sum.
    # FUSED_COMBINE: the program of a (batch, KV head, head tile) that finishes last (a counter per tile,
    # counter_ptr, zero before the launch and reset to zero by that program) merges the partials and writes
    # the output, so one launch does the whole step; otherwise _decode_combine_kernel runs after.
    # PDL: the combine kernel is launched as a programmatic dependent (its launch overlaps this grid; it waits
    # for this grid's memory before reading the partials)
    if PDL:
        gdc_launch_dependents()
    pid = tl.program_id(0)
    split = tl.program_id(1)
    g_tile = pid % G_TILES
    b = (pid // (G_TILES * H_kv)).to(tl.int64)
    hk = ((pid // G_TILES) % H_kv).to(tl.int64)
    if HAS_LENS:
        length = tl.minimum(tl.load(lens_ptr + b), T)
    else:
        length = T
    first = tl.maximum(length - window, 0)
    start = first + split * chunk
    end = tl.minimum(start + chunk, length)

    g = g_tile * BLOCK_G + tl.arange(0, BLOCK_G)
    cols = tl.arange(0, BLOCK_N)
    d = tl.arange(0, BLOCK_D)
    g_ok = g < GROUP
    d_ok = d < D
    heads = hk * GROUP + g
    q_base = q_ptr + b * sqb
    if not Q_IN_LOOP:
        q = _load_rows(q_base, heads, sqh, d, g_ok, d_ok)
    k_base = k_ptr + b * skb + hk * skh
    v_base = v_ptr + b * svb + hk * svh

    m_i, l_i, acc = _softmax_start(BLOCK_G, BLOCK_D)
    for n in range(start, end, BLOCK_N):
        keys = n + cols
        key_ok = keys < end
        if Q_IN_LOOP:
            q = _load_rows(q_base, heads, sqh, d, g_ok & (n < end), d_ok)
        k = _load_rows(k_base, keys, skt, d, key_ok, d_ok)
        s = tl.where(key_ok[None, :], tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale, float("-inf"))
        v = _load_rows(v_base, keys, svt, d, key_ok, d_ok)
        m_i, l_i, acc = _online_softmax_step(s, m_i, l_i, acc, v, PRECISION)

    rows_total = (B * H * num_splits).to(tl.int64)
    acc_off = 0
    m_off = rows_total * D
    l_off = m_off + rows_total
    part = (b * H + heads) * num_splits + split
    tl.store(part_ptr + m_off + part, m_i, mask=g_ok)
    tl.store(part_ptr + l_off + part, l_i, mask=g_ok)
    tl.store(part_ptr + acc_off + part[:, None] * D + d[None, :], acc, mask=g_ok[:, None] & d_ok[None, :])
    if FUSED_COMBINE:
        # every thread's partial stores are issued before the (gpu-scope, acq_rel) count; the program that
        # sees num_splits - 1 knows all others have published theirs
        tl.debug_barrier()
        arrived = tl.atomic_add(counter_ptr + pid, 1, sem="acq_rel", scope="gpu")
        if arrived == num_splits - 1:
            # the tile's heads in slices of MERGE_G rows, skipping slices past the group (a group of 8
            # pads the tile to 16 rows: the padding would idle half the threads of a 16-row merge)
            for gs in tl.static_range(0, BLOCK_G, MERGE_G):
                gm0 = g_tile * BLOCK_G + gs
                if gm0 < GROUP:
                    gm = gm0 + tl.arange(0, MERGE_G)
                    gm_ok = gm < GROUP
                    heads_m = hk * GROUP + gm
                    out = _merge_splits(part_ptr, sink_ptr, heads_m, gm_ok, d, d_ok, num_splits,
                                        b * H * num_splits, num_splits, D, acc_off, m_off, l_off, MERGE_G,
                                        BLOCK_S, BLOCK_D, MERGE_STAGES)
                    tl.store(o_ptr + b * sob + heads_m[:, None] * soh + d[None, :],
                             out.to(o_ptr.dtype.element_ty), mask=gm_ok[:, None] & d_ok[None, :])
            tl.atomic_xchg(counter_ptr + pid, 0, sem="relaxed", scope="gpu")


@triton.jit
def _fold_splits(part_ptr, first, num_splits, rows_total, D, m, d, d_ok, BLOCK_S: tl.constexpr,
                 BLOCK_D: tl.constexpr):
    # One head's normalized output from its partials (rows first .. first + num_splits, as _decode_split_kernel
    # laid them out), BLOCK_S splits a step into a running (max, sum, acc) that starts at the sink's max m
    # (sum 1, value 0; m = -inf: no sink).
    l = (m > float("-inf")).to(tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        sp = s0 + tl.arange(0, BLOCK_S)
        ok = sp < num_splits
        row = first + sp
        m_s = tl.load(part_ptr + rows_total * D + row, mask=ok, other=float("-inf"), cache_modifier=".cg")
        l_s = tl.load(part_ptr + rows_total * (D + 1) + row, mask=ok, other=0.0, cache_modifier=".cg")
        a_s = tl.load(part_ptr + row[:, None] * D + d[None, :], mask=ok[:, None] & d_ok[None, :], other=0.0,
                      cache_modifier=".cg")
        m_new = tl.maximum(m, tl.max(m_s, 0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m - m_safe)
        w = tl.exp2(m_s - m_safe)
        l = l * alpha + tl.sum(l_s * w, 0)
        acc = acc * alpha + tl.sum(a_s * w[:, None], 0)
        m = m_new
    return acc / tl.where(l == 0.0, 1.0, l)


@triton.jit
def _decode_combine_kernel(part_ptr, sink_ptr, o_ptr, sob, soh, B, H, D, num_splits,
                           BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, PDL: tl.constexpr):
    # grid: (B*H,): one (batch, head)'s partials folded into its output. Launched with one warp (COMBINE_WARPS),
    # so the sums over splits stay inside the warp (no shared memory, no barrier).
    pid = tl.program_id(0)
    b = (pid // H).to(tl.int64)
    h = (pid % H).to(tl.int64)
    m = tl.load(sink_ptr + h).to(tl.float32) * 1.4426950408889634  # an input, not a partial: read before the wait
    if PDL:
        gdc_wait()  # launched while the split kernel ran: its partials are complete and visible after this
    d = tl.arange(0, BLOCK_D)
    d_ok = d < D
    out = _fold_splits(part_ptr, (b * H + h) * num_splits, num_splits, (B * H * num_splits).to(tl.int64), D, m, d,
                       d_ok, BLOCK_S, BLOCK_D)
    tl.store(o_ptr + b * sob + h * soh + d, out.to(o_ptr.dtype.element_ty), mask=d_ok)


# ---------------------------------------------------------------------------------------------------
# launchers (Triton path; tilewave.ops decides when to call them)
# ---------------------------------------------------------------------------------------------------
def _head_block(D: int, op: str, device: torch.device) -> int:
    """The padded head dim: a power of two; on the GPU 64 or 128 only, so two compiled forms cover every D."""
    if not 1 <= D <= MAX_HEAD_DIM:
        raise ValueError(f"{op}: head dim must be in [1, {MAX_HEAD_DIM}], got {D}")
    return max(16 if device.type == "cpu" else GPU_HEAD_BLOCKS[0], _next_pow2(D))


def _check_qkv(op: str, q, k, v, expect_dims: int = 4) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != expect_dims:
            raise ValueError(f"{op}: {name} must be {expect_dims}-D, got shape {tuple(t.shape)}")
        if t.stride(-1) != 1:
            raise ValueError(f"{op}: the last dim of {name} must be contiguous (stride 1), got strides "
                             f"{t.stride()}; call .contiguous() on it")
        if t.dtype != q.dtype or t.device != q.device:
            raise ValueError(f"{op}: q, k, v must share dtype and device, got {name} {t.dtype} on {t.device} "
                             f"vs q {q.dtype} on {q.device}")
    if k.shape != v.shape:
        raise ValueError(f"{op}: k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{op}: q and k head dims differ: {q.shape[-1]} vs {k.shape[-1]}")


def _dot_precision(dtype: torch.dtype, precision: str) -> str:
    # 16-bit operands always run on the tensor cores; the setting only means something for float32.
    return dot_input(precision, dtype, "tf32")


def _dot_form(dtype: torch.dtype, precision: str) -> str:
    return tile_class(precision, dtype)


def _pick(table: dict, form: str, block_d: int):
    """A table's config for a dot form: one tuple, or a dict of tuples by head block."""
    cfg = table[form]
    return cfg[block_d] if isinstance(cfg, dict) else cfg


def _config(device: torch.device, dtype: torch.dtype, precision: str, block_d: int, cpu, gpu: dict):
    return cpu if device.type == "cpu" else _pick(gpu, _dot_form(dtype, precision), block_d)


def _cdiv(a: int, b: int) -> int:
    # triton.cdiv is a jit function: ~10 µs a host call, and the decode launcher makes several
    return -(-a // b)


def _next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _fwd_config(device: torch.device, dtype: torch.dtype, precision: str, block_d: int, has_kpm: bool):
    if device.type == "cpu":
        return _FWD_CPU
    form = _dot_form(dtype, precision)
    return _pick(_FWD_GPU_KPM if has_kpm and form in _FWD_GPU_KPM else _FWD_GPU, form, block_d)


def _out(q: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return torch.empty_like(q)
    if out.shape != q.shape or out.dtype != q.dtype or out.stride(-1) != 1:
        raise ValueError(f"out must match q: shape {tuple(q.shape)}, dtype {q.dtype}, unit last stride; "
                         f"got {tuple(out.shape)}, {out.dtype}, strides {out.stride()}")
    return out


def _scale(scale: float | None, D: int) -> float:
    return (1.0 / math.sqrt(D) if scale is None else float(scale)) * LOG2E


def _launch_fwd(q, k, v, key_padding_mask, seg_start, seg_len, scale, precision, out, op, config=None):
    _check_qkv(op, q, k, v)
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    if k.shape[:2] != (B, H):
        raise ValueError(f"{op}: k/v must be [B={B}, H={H}, Tk, D], got {tuple(k.shape)}")
    BLOCK_D = _head_block(D, op, q.device)
    out = _out(q, out)
    kpm = q
    if key_padding_mask is not None:
        if key_padding_mask.shape != (B, Tk) or key_padding_mask.dtype != torch.bool:
            raise ValueError(f"{op}: key_padding_mask must be bool [B={B}, Tk={Tk}] (True = attend), got "
                             f"{key_padding_mask.dtype} {tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.contiguous().view(torch.uint8)
    windowed = seg_start is not None
    if not windowed:
        seg_start = seg_len = q
    qk_scale = _scale(scale, D)
    masked = key_padding_mask is not None or windowed
    BLOCK_M, BLOCK_N, warps, stages = config or _fwd_config(q.device, q.dtype, precision, BLOCK_D,
                                                          key_padding_mask is not None)
    if B * H and Tq:
        _sdpa_fwd_kernel[(_cdiv(Tq, BLOCK_M), B * H)](
            q, k, v, out, kpm, seg_start, seg_len,
            *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3], kpm.stride(0),
            H, Tq, Tk, D, qk_scale,
            HAS_KPM=key_padding_mask is not None, WINDOWED=windowed,
            EVEN_K=not masked and Tk % BLOCK_N == 0 and qk_scale > 0, BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D, PRECISION=_dot_precision(q.dtype, precision),
            num_warps=warps, num_stages=stages)
    return out


def sdpa_bidirectional(q, k, v, key_padding_mask=None, scale=None, precision="ieee", out=None):
    return _launch_fwd(q, k, v, key_padding_mask, None, None, scale, precision, out, "sdpa_bidirectional")


def _check_segments(op: str, seg_start, seg_len, T: int) -> None:
    for name, t in (("seg_start", seg_start), ("seg_len", seg_len)):
        if t.shape != (T,) or t.dtype != torch.int32 or not t.is_contiguous():
            raise ValueError(f"{op}: {name} must be a contiguous int32 [T={T}] tensor, got {t.dtype} "
                             f"{tuple(t.shape)}")


def sdpa_bidirectional_windowed(q, k, v, seg_start, seg_len, scale=None, precision="ieee", out=None):
    op = "sdpa_bidirectional_windowed"
    _check_segments(op, seg_start, seg_len, q.shape[2])
    if k.shape[2] != q.shape[2]:
        raise ValueError(f"{op}: queries and keys are the same tokens, got Tq={q.shape[2]} and Tk={k.shape[2]}")
    return _launch_fwd(q, k, v, None, seg_start, seg_len, scale, precision, out, op)


def _gqa_group(op: str, H: int, H_kv: int) -> int:
    if H_kv < 1 or H % H_kv:
        raise ValueError(f"{op}: query heads ({H}) must be a multiple of KV heads ({H_kv})")
    return H // H_kv


def sdpa_rel_pos_conformer(q, k, v, rel_emb, pos_bias_u, pos_bias_v, rel_zero=None, scale=None,
                           precision="ieee", out=None):
    return _launch_rel_pos(q, k, v, rel_emb, pos_bias_u, pos_bias_v, rel_zero, scale, precision, out)


def _launch_rel_pos(q, k, v, rel_emb, pos_bias_u, pos_bias_v, rel_zero, scale, precision, out, config=None):
    """config: (BLOCK, num_warps, num_stages) instead of the table's pick (benchmarks/tune_attn.py)."""
    op = "sdpa_rel_pos_conformer"
    _check_qkv(op, q, k, v)
    B, H, Tq, D = q.shape
    H_kv, Tk = k.shape[1], k.shape[2]
    group = _gqa_group(op, H, H_kv)
    rel_zero = Tq - 1 if rel_zero is None else int(rel_zero)
    if rel_emb.dim() != 3 or rel_emb.shape[1:] != (H, D) or rel_emb.shape[0] < 1 or rel_emb.stride(-1) != 1:
        raise ValueError(f"{op}: rel_emb must be [rel_len, H={H}, D={D}] with a unit D stride, got shape "
                         f"{tuple(rel_emb.shape)} strides {rel_emb.stride()}")
    for name, t in (("pos_bias_u", pos_bias_u), ("pos_bias_v", pos_bias_v)):
        if t.shape != (H, D):
            raise ValueError(f"{op}: {name} must be [H={H}, D={D}], got {tuple(t.shape)}")
    if rel_emb.dtype != q.dtype:
        raise ValueError(f"{op}: rel_emb must have q's dtype {q.dtype}, got {rel_emb.dtype}")
    BLOCK_D = _head_block(D, op, q.device)
    out = _out(q, out)
    BLOCK, warps, stages = config or _config(q.device, q.dtype, precision, BLOCK_D, _REL_CPU, _REL_GPU)
    if B * H and Tq:
        _sdpa_rel_pos_kernel[(_cdiv(Tq, BLOCK), B * H)](
            q, k, v, out, rel_emb, pos_bias_u.contiguous(), pos_bias_v.contiguous(),
            *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3], *rel_emb.stride()[:2],
            H, group, Tq, Tk, D, rel_emb.shape[0], rel_zero, _scale(scale, D),
            BLOCK=BLOCK, BLOCK_D=BLOCK_D, PRECISION=_dot_precision(q.dtype, precision),
            SPLIT_D=_dot_form(q.dtype, precision) in _REL_SPLIT_D_FORMS,
            num_warps=warps, num_stages=stages)
    return out


def _decode_plan(device: torch.device, dtype: torch.dtype, precision: str, block_d: int, span: int) -> _DecodePlan:
    """What the launcher runs for `span` keys per (batch, KV head)."""
    short = span <= _DEC_FUSED_MAX_KEYS
    if device.type == "cpu":
        return _DecodePlan(_DEC_CPU, short, _DEC_MERGE, True)  # the interpreter covers the in-loop form
    form = _dot_form(dtype, precision)
    long = None if short else _DEC_GPU_LONG.get(form, {}).get(block_d)
    return long or _DecodePlan(_pick(_DEC_GPU, form, block_d), short and form not in _DEC_SHORT_SEPARATE,
                               _DEC_MERGE, _DEC_Q_IN_LOOP[form])


def _decode_splits(span: int, programs: int, device: torch.device, block_n: int,
                   num_splits: int | None, programs_per_sm: int = _DEC_PROGRAMS_PER_SM) -> tuple[int, int]:
    """(num_splits, chunk): enough splits that programs x splits fills the GPU; chunk a multiple of block_n."""
    if num_splits is None:
        if device.type == "cpu":
            target = _DEC_CPU_PROGRAMS
        else:
            target = programs_per_sm * _sm_count(device.index or 0)
        num_splits = _cdiv(target, programs)
    num_splits = max(1, min(int(num_splits), _cdiv(max(span, 1), block_n), 65535))  # grid axis 1 limit
    chunk = _cdiv(_cdiv(max(span, 1), num_splits), block_n) * block_n
    return _cdiv(max(span, 1), chunk), chunk


_arrival_counters: dict[tuple, torch.Tensor] = {}


def _arrival_counters_for(device: torch.device, n: int) -> torch.Tensor:
    """Zeroed int32 counters for the fused decode combine, one buffer per (device, stream): each launch
    leaves them zero again, so launches on one stream reuse them in order and streams never share one.
    Under CUDA graph capture the graph gets its own (its zeroing is captured with it): a cached buffer
    from the graph's memory pool would dangle once the graph is freed."""
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        return torch.zeros(n, dtype=torch.int32, device=device)
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (device, stream)
    buf = _arrival_counters.get(key)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 1024), dtype=torch.int32, device=device)
        _arrival_counters[key] = buf
    return buf


def sdpa_decode_sink(q, k_cache, v_cache, sinks, cache_lens=None, window=None, scale=None, precision="ieee",
                     num_splits=None, out=None):
    return _launch_decode(q, k_cache, v_cache, sinks, cache_lens, window, scale, precision, num_splits, out)


def _launch_decode(q, k_cache, v_cache, sinks, cache_lens, window, scale, precision, num_splits, out,
                   config=None, fused_combine=None, merge=None):
    """config: (BLOCK_N, num_warps, num_stages), fused_combine: True/False, merge: the fused merge's (rows,
    elements a step, stages) instead of the module's picks (benchmarks/tune_attn*.py)."""
    op = "sdpa_decode_sink"
    if q.dim() == 4 and q.shape[2] == 1:
        q3 = q[:, :, 0]
    elif q.dim() == 3:
        q3 = q
    else:
        raise ValueError(f"{op}: q must be [B, H, D] or [B, H, 1, D], got {tuple(q.shape)}")
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape or k_cache.shape[2] < 1:
        raise ValueError(f"{op}: k_cache and v_cache must both be [B, H_kv, T >= 1, D], got {tuple(k_cache.shape)} "
                         f"and {tuple(v_cache.shape)}")
    _check_qkv(op, q3, k_cache[:, :, 0], v_cache[:, :, 0], expect_dims=3)
    B, H, D = q3.shape
    H_kv, T = k_cache.shape[1], k_cache.shape[2]
    if k_cache.shape[0] != B:
        raise ValueError(f"{op}: KV cache batch {k_cache.shape[0]} differs from q's {B}")
    group = _gqa_group(op, H, H_kv)
    if sinks.shape != (H,):
        raise ValueError(f"{op}: sinks must be [H={H}], got {tuple(sinks.shape)}")
    if cache_lens is not None and (cache_lens.shape != (B,) or cache_lens.dtype != torch.int32):
        raise ValueError(f"{op}: cache_lens must be int32 [B={B}], got {cache_lens.dtype} {tuple(cache_lens.shape)}")
    if window is not None and window < 1:
        raise ValueError(f"{op}: window must be >= 1 key (or None for no window), got {window}")
    BLOCK_D = _head_block(D, op, q.device)
    g_tiles = _cdiv(group, DECODE_BLOCK_G)
    out = _out(q, out)
    out3 = out[:, :, 0] if out.dim() == 4 else out
    window = T if window is None else min(int(window), T)
    plan = _decode_plan(q.device, q.dtype, precision, BLOCK_D, window)
    q_in_loop = plan.q_in_loop if DECODE_Q_IN_LOOP is None else DECODE_Q_IN_LOOP
    fused = plan.fused if fused_combine is None else bool(fused_combine)
    BLOCK_N, warps, stages = config or plan.config
    tiles = B * H_kv * g_tiles
    splits, chunk = _decode_splits(window, tiles, q.device, BLOCK_N, num_splits, plan.programs_per_sm)
    if B * H == 0:
        return out
    pdl = DECODE_PDL and not fused and hopper_or_newer(q.device)
    parts = torch.empty(B * H * splits * (D + 2), device=q.device, dtype=torch.float32)
    counters = _arrival_counters_for(q.device, tiles) if fused else parts
    lens = q3 if cache_lens is None else cache_lens
    _decode_split_kernel[(tiles, splits)](
        q3, k_cache, v_cache, lens, sinks, out3, parts, counters,
        *q3.stride()[:2], *k_cache.stride()[:3], *v_cache.stride()[:3], *out3.stride()[:2],
        B, H, H_kv, group, g_tiles, T, D, window, chunk, splits, _scale(scale, D),
        HAS_LENS=cache_lens is not None, FUSED_COMBINE=fused, BLOCK_G=DECODE_BLOCK_G, BLOCK_N=BLOCK_N,
        BLOCK_D=BLOCK_D, PRECISION=_dot_precision(q.dtype, precision), PDL=pdl, Q_IN_LOOP=q_in_loop,
        **_merge_constexprs(BLOCK_D, merge or plan.merge), num_warps=warps, num_stages=stages)
    if not fused:
        _decode_combine_kernel[(B * H,)](parts, sinks, out3, *out3.stride()[:2], B, H, D, splits,
                                         BLOCK_S=COMBINE_BLOCK_S, BLOCK_D=BLOCK_D, PDL=pdl,
                                         num_warps=COMBINE_WARPS, launch_pdl=pdl)
    return out


def _merge_block(rows: int, block_d: int, elems: int) -> int:
    return max(1, min(COMBINE_BLOCK_S, elems // (rows * block_d)))


def _merge_constexprs(block_d: int, merge: tuple[int, int, int] = _DEC_MERGE) -> dict:
    rows, elems, stages = merge
    return {"MERGE_G": rows, "BLOCK_S": _merge_block(rows, block_d, elems), "MERGE_STAGES": stages}


# ---------------------------------------------------------------------------------------------------
# PyTorch peers (also the CPU path of tilewave.ops): F.scaled_dot_product_attention with the equivalent
# explicit mask or bias; rows with no key to attend are set to 0 (PyTorch leaves them NaN).
# ---------------------------------------------------------------------------------------------------
def _zero_unattended(out: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
    return out.masked_fill(~attend.any(-1, keepdim=True), 0.0)


def sdpa_bidirectional_torch(q, k, v, key_padding_mask=None, scale=None):
    if key_padding_mask is None:
        return F.scaled_dot_product_attention(q, k, v, scale=scale)
    attend = key_padding_mask[:, None, None, :]
    return _zero_unattended(F.scaled_dot_product_attention(q, k, v, attn_mask=attend, scale=scale), attend)


def window_mask(seg_start: torch.Tensor, seg_len: torch.Tensor, T: int) -> torch.Tensor:
    """[T, T] bool: query i attends key j iff seg_start[i] <= j < seg_start[i] + seg_len[i]."""
    j = torch.arange(T, device=seg_start.device)[None, :]
    lo = seg_start.long()[:, None]
    return (j >= lo) & (j < lo + seg_len.long()[:, None])


def segments_from_lengths(lengths, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Consecutive windows of the given lengths (tokens in window order) -> per-token (seg_start, seg_len)."""
    lengths = torch.as_tensor(lengths, dtype=torch.int32)
    starts = torch.cumsum(lengths, 0, dtype=torch.int32) - lengths
    seg_start = torch.repeat_interleave(starts, lengths.long())
    seg_len = torch.repeat_interleave(lengths, lengths.long())
    return seg_start.to(device), seg_len.to(device)


def sdpa_bidirectional_windowed_torch(q, k, v, seg_start, seg_len, scale=None):
    attend = window_mask(seg_start, seg_len, q.shape[2])
    return _zero_unattended(F.scaled_dot_product_attention(q, k, v, attn_mask=attend, scale=scale), attend)


def rel_pos_index(Tq: int, Tk: int, rel_len: int, rel_zero: int, device=None) -> torch.Tensor:
    """[Tq, Tk] long: dist_ij = clamp(j + rel_zero - i, 0, rel_len - 1), the row of rel_emb for (i, j)."""
    i = torch.arange(Tq, device=device)[:, None]
    j = torch.arange(Tk, device=device)[None, :]
    return (j + rel_zero - i).clamp(0, rel_len - 1)


def rel_pos_bias(q, k, rel_emb, pos_bias_v, rel_zero, scale):
    """[B, H, Tq, Tk]: scale·(q_i + v_h)·rel_emb[dist_ij, h], by one product with every row, then a gather."""
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    rel_zero = Tq - 1 if rel_zero is None else rel_zero
    pos = torch.einsum("bhid,rhd->bhir", q + pos_bias_v[None, :, None, :], rel_emb)
    idx = rel_pos_index(Tq, Tk, rel_emb.shape[0], rel_zero, q.device).expand(B, H, Tq, Tk)
    return torch.gather(pos, -1, idx) * scale


def sdpa_rel_pos_conformer_torch(q, k, v, rel_emb, pos_bias_u, pos_bias_v, rel_zero=None, scale=None):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    bias = rel_pos_bias(q, k, rel_emb, pos_bias_v, rel_zero, scale).to(q.dtype)
    return F.scaled_dot_product_attention(q + pos_bias_u[None, :, None, :], k, v, attn_mask=bias, scale=scale,
                                          enable_gqa=k.shape[1] != q.shape[1])


def decode_attend_mask(cache_lens, window, B: int, T: int, device=None) -> torch.Tensor:
    """[B, T] bool: key t is attended iff len_b - window <= t < len_b (len_b = T without cache_lens)."""
    t = torch.arange(T, device=device)[None, :]
    lens = torch.full((B, 1), T, device=device) if cache_lens is None else cache_lens.long().view(B, 1)
    attend = t < lens
    return attend if window is None else attend & (t >= lens - window)


def sdpa_decode_sink_torch(q, k_cache, v_cache, sinks, cache_lens=None, window=None, scale=None):
    """The sink as a virtual key: a zero key and value appended to the cache, its logit set by the mask."""
    B, H_kv, T, D = k_cache.shape
    q4 = q if q.dim() == 4 else q[:, :, None]
    zero = k_cache.new_zeros(B, H_kv, 1, D)
    attend = decode_attend_mask(cache_lens, window, B, T, q.device)
    bias = torch.zeros(B, 1, T, dtype=q.dtype, device=q.device).masked_fill(~attend[:, None], float("-inf"))
    bias = torch.cat([bias.expand(B, q4.shape[1], T), sinks.to(q.dtype).expand(B, -1)[..., None]], -1)
    out = F.scaled_dot_product_attention(q4, torch.cat([k_cache, zero], 2), torch.cat([v_cache, zero], 2),
                                         attn_mask=bias[:, :, None, :], scale=scale, enable_gqa=H_kv != q4.shape[1])
    return out.nan_to_num(0.0) if q.dim() == 4 else out[:, :, 0].nan_to_num(0.0)


# ---------------------------------------------------------------------------------------------------
# float64 oracles: the scores written out, then one explicit softmax
# ---------------------------------------------------------------------------------------------------
def _softmax_attend(scores: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(scores)·v over the last axis; -inf scores are masked keys; a row with none left outputs 0."""
    m = scores.amax(-1, keepdim=True)
    p = torch.exp(scores - torch.where(torch.isinf(m), 0.0, m))
    l = p.sum(-1, keepdim=True)
    return (p @ v) / torch.where(l == 0, 1.0, l)


def _gqa_expand(t: torch.Tensor, H: int) -> torch.Tensor:
    return t.repeat_interleave(H // t.shape[1], dim=1)


def _default_scale(scale, D):
    return 1.0 / math.sqrt(D) if scale is None else scale


def sdpa_oracle(q, k, v, key_padding_mask=None, scale=None, precision=None):
    scores = q @ k.transpose(-1, -2) * _default_scale(scale, q.shape[-1])
    if key_padding_mask is not None:
        scores = scores.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
    return _softmax_attend(scores, v)


def sdpa_windowed_oracle(q, k, v, seg_start, seg_len, scale=None, precision=None):
    scores = q @ k.transpose(-1, -2) * _default_scale(scale, q.shape[-1])
    return _softmax_attend(scores.masked_fill(~window_mask(seg_start, seg_len, q.shape[2]), float("-inf")), v)


def sdpa_rel_pos_oracle(q, k, v, rel_emb, pos_bias_u, pos_bias_v, rel_zero=None, scale=None, precision=None):
    H = q.shape[1]
    k, v = _gqa_expand(k, H), _gqa_expand(v, H)
    scale = _default_scale(scale, q.shape[-1])
    content = (q + pos_bias_u[None, :, None, :]) @ k.transpose(-1, -2) * scale
    return _softmax_attend(content + rel_pos_bias(q, k, rel_emb, pos_bias_v, rel_zero, scale), v)


def sdpa_decode_sink_oracle(q, k_cache, v_cache, sinks, cache_lens=None, window=None, scale=None,
                            precision=None, num_splits=None):
    # query heads grouped per KV head ([B, H_kv, G, ...]), so the cache is never copied per query head
    B, H_kv, T, D = k_cache.shape
    G = q.shape[1] // H_kv
    scores = q.reshape(B, H_kv, G, D) @ k_cache.transpose(-1, -2) * _default_scale(scale, D)
    attend = decode_attend_mask(cache_lens, window, B, T, k_cache.device)
    scores = scores.masked_fill(~attend[:, None, None], float("-inf"))
    scores = torch.cat([scores, sinks.reshape(1, H_kv, G, 1).expand(B, -1, -1, -1)], -1)
    v_ext = torch.cat([v_cache, v_cache.new_zeros(B, H_kv, 1, D)], 2)
    return _softmax_attend(scores, v_ext).reshape(q.shape)


# ---------------------------------------------------------------------------------------------------
# registration: tests (small shapes on the interpreter, model shapes on the GPU), benches, AOT variants
# ---------------------------------------------------------------------------------------------------
def _qkv(p, dtype, device, gen, H_kv=None):
    B, H, D = p["B"], p["H"], p["D"]
    Tq, Tk = p.get("Tq", p.get("T")), p.get("Tk", p.get("T"))
    H_kv = H if H_kv is None else H_kv
    # q scaled by 1.5: peakier softmax rows than unit-variance scores give, closer to trained attention.
    return {"q": randn((B, H, Tq, D), dtype, device, gen, scale=1.5), "k": randn((B, H_kv, Tk, D), dtype, device, gen),
            "v": randn((B, H_kv, Tk, D), dtype, device, gen)}


def _precision(p):
    return {"precision": p.get("precision", "ieee")}


def _sdpa_inputs(p, dtype, device, gen):
    inputs = _qkv(p, dtype, device, gen)
    Tk = inputs["k"].shape[2]
    if "lengths" in p:  # ragged batch: keys [0, length) of each sequence, the rest padding
        inputs["key_padding_mask"] = (torch.arange(Tk)[None, :] < torch.tensor(p["lengths"])[:, None]).to(device)
    elif p.get("holes"):  # padding anywhere, not only at the end
        inputs["key_padding_mask"] = (torch.rand((p["B"], Tk), generator=gen) > 0.4).to(device)
    return {**inputs, **_precision(p)}


def ragged_windows(T: int, full: int, seed: int) -> tuple[int, ...]:
    """Window lengths summing to T: mostly `full`, with the short edge windows an image grid leaves."""
    gen = torch.Generator().manual_seed(seed)
    out, left = [], T
    while left:
        n = full if torch.rand((), generator=gen) < 0.6 else int(torch.randint(1, full, (), generator=gen))
        out.append(min(n, left))
        left -= out[-1]
    return tuple(out)


def _windowed_inputs(p, dtype, device, gen):
    seg_start, seg_len = segments_from_lengths(p["windows"], device)
    return {**_qkv({**p, "T": sum(p["windows"])}, dtype, device, gen), "seg_start": seg_start, "seg_len": seg_len,
            **_precision(p)}


def _rel_pos_inputs(p, dtype, device, gen):
    H, D, T = p["H"], p["D"], p["T"]
    inputs = _qkv(p, dtype, device, gen, H_kv=p["H_kv"])
    rel_len, rel_zero = p.get("rel_len", 2 * T - 1), p.get("rel_zero", T - 1)
    inputs["rel_emb"] = randn((rel_len, H, D), dtype, device, gen)
    bias_scale = 0.0 if p.get("zero_bias") else 0.5
    inputs["pos_bias_u"] = randn((H, D), dtype, device, gen, scale=bias_scale)
    inputs["pos_bias_v"] = randn((H, D), dtype, device, gen, scale=bias_scale)
    inputs["rel_zero"] = rel_zero
    return {**inputs, **_precision(p)}


def _decode_inputs(p, dtype, device, gen):
    B, H, H_kv, T, D = p["B"], p["H"], p["H_kv"], p["T"], p["D"]
    inputs = {"q": randn((B, H, D), dtype, device, gen, scale=1.5), "k_cache": randn((B, H_kv, T, D), dtype, device, gen),
              "v_cache": randn((B, H_kv, T, D), dtype, device, gen),
              "sinks": randn((H,), torch.float32, device, gen, scale=2.0), "window": p.get("window")}
    if "lens" in p:
        inputs["cache_lens"] = torch.tensor(p["lens"], dtype=torch.int32, device=device)
    return {**inputs, **_precision(p)}


_CPU = ("cpu", "cuda")
_GPU = ("cuda",)
_INTERPRETABLE = ("float32", "float16")  # bf16 tl.dot gives garbage in the interpreter; bf16 runs on the GPU
_TF32 = {"precision": "tf32"}
_TF32X3 = {"precision": "tf32x3"}
_FP32 = ("float32",)


def _bench_rows(label: str, params: dict, flops, nbytes) -> list[BenchShape]:
    """A shape in 16-bit, and in float32 at both exact precisions, each row labelled with its precision:
    tf32x3 is what PyTorch's float32 SDPA (memory-efficient CUTLASS kernel, 3xTF32 on sm_80+) computes."""
    return [BenchShape(label, params, flops, nbytes, dtypes=("float16", "bfloat16")),
            BenchShape(f"{label}, fp32 tf32x3", {**params, **_TF32X3}, flops, nbytes, dtypes=_FP32),
            BenchShape(f"{label}, fp32 ieee", params, flops, nbytes, dtypes=_FP32)]


def _attention_bytes(p, itemsize, Tq=None, Tk=None):
    """q and o once, k and v once: B·H·(2·Tq + 2·Tk·H_kv/H)·D elements."""
    Tq = Tq or p.get("Tq", p.get("T"))
    Tk = Tk or p.get("Tk", p.get("T"))
    H_kv = p.get("H_kv", p["H"])
    return itemsize * p["B"] * p["D"] * (2 * p["H"] * Tq + 2 * H_kv * Tk)


def _full_flops(p):
    return 4 * p["B"] * p["H"] * p.get("Tq", p.get("T")) * p.get("Tk", p.get("T")) * p["D"]


# Variant helpers: one compiled form per storage dtype and float32 precision ('ieee' runs on FMA units,
# so only the 16-bit and tf32 forms must use the tensor cores).
_DOT_FORMS = (("fp32", "ieee", False), ("fp32", "tf32x3", True), ("fp32", "tf32", True), ("fp16", "tf32", True),
              ("bf16", "tf32", True))


# Integer arguments that are multiples of 16 at every attention model shape (head dims 64, 80, 128): the strides
# of [.., D]-contiguous q/k/v/out/rel_emb rows, D, and the decode chunk (a multiple of its key block). The runtime
# specialises them, and the build gate compiles that form (AotVariant.aligned_ints); sequence lengths vary.
_ALIGNED_INTS = ("sqb", "sqh", "sqt", "skb", "skh", "skt", "svb", "svh", "svt", "sob", "soh", "sot", "srr", "srh",
                 "D", "chunk")


def _aligned_ints(fn) -> tuple[str, ...]:
    return tuple(prm.name for prm in fn.params if prm.name in _ALIGNED_INTS)


def _signature(fn, dt: str, pointer_types: dict[str, str], floats=("qk_scale",)) -> dict[str, str]:
    sig = {}
    for prm in fn.params:
        if prm.is_constexpr:
            continue
        if prm.name.endswith("_ptr"):
            sig[prm.name] = pointer_types.get(prm.name, f"*{dt}")
        else:
            sig[prm.name] = "fp32" if prm.name in floats else "i32"
    return sig


def _dot_variants(fn, tables: tuple[dict, ...], tile_names: tuple[str, ...], modes: list[dict],
                  pointer_types: dict[str, str], per_head_block=lambda BLOCK_D: {}, per_form=lambda form: {}):
    """Every (dot form, tile config, mode, head block) of a tl.dot kernel: each config of `tables` the
    launcher can pick for the form."""
    out = []
    for dt, prec, mma in _DOT_FORMS:
        form = prec if dt == "fp32" else "16bit"
        for BLOCK_D in GPU_HEAD_BLOCKS:
            for cfg in dict.fromkeys(_pick(t, form, BLOCK_D) for t in tables if form in t):
                *tiles, warps, stages = cfg
                for mode in modes:
                    tag = ",".join([dt, prec, *map(str, cfg), *(f"{k}={v}" for k, v in mode.items()), f"D={BLOCK_D}"])
                    constexprs = {**dict(zip(tile_names, tiles)), **mode, "BLOCK_D": BLOCK_D, "PRECISION": prec,
                                  **per_head_block(BLOCK_D), **per_form(form)}
                    out.append(AotVariant(f"{fn.__name__}[{tag}]", fn, _signature(fn, dt, pointer_types),
                                          constexprs, num_warps=warps, num_stages=stages, expect_mma=mma,
                                          aligned_ints=_aligned_ints(fn)))
    return out


def _fwd_variants(modes):
    pointers = {"kpm_ptr": "*u8", "seg_start_ptr": "*i32", "seg_len_ptr": "*i32"}
    unmasked = [{"HAS_KPM": False, "WINDOWED": False, "EVEN_K": even} for even in (False, True)]
    out = []
    for kpm, win in modes:
        if kpm or win:
            tables = ({**_FWD_GPU, **_FWD_GPU_KPM},) if kpm else (_FWD_GPU,)
            out += _dot_variants(_sdpa_fwd_kernel, tables, ("BLOCK_M", "BLOCK_N"),
                                 [{"HAS_KPM": kpm, "WINDOWED": win, "EVEN_K": False}], pointers)
    if (False, False) in modes:
        out += _dot_variants(_sdpa_fwd_kernel, (_FWD_GPU,), ("BLOCK_M", "BLOCK_N"), unmasked, pointers)
    return out


def _rel_pos_variants():
    return _dot_variants(_sdpa_rel_pos_kernel, (_REL_GPU,), ("BLOCK",), [{}], {},
                         per_form=lambda form: {"SPLIT_D": form in _REL_SPLIT_D_FORMS})


_PARTIALS = {"part_ptr": "*fp32", "sink_ptr": "*fp32"}


def _decode_variants():
    def split_variants(tables, fused, plan_of=lambda BLOCK_D: None):
        # plan_of: the _DEC_GPU_LONG plan a head block's variant follows (its merge), None: the default merge;
        # q in the loop follows the form (_DEC_GPU_LONG's entries agree with _DEC_Q_IN_LOOP)
        def per_head_block(BLOCK_D):
            plan = plan_of(BLOCK_D)
            return _merge_constexprs(BLOCK_D, plan.merge if plan else _DEC_MERGE)
        return _dot_variants(_decode_split_kernel, tables, ("BLOCK_N",),
                             [{"HAS_LENS": lens, "FUSED_COMBINE": fused, "BLOCK_G": DECODE_BLOCK_G, "PDL": not fused}
                              for lens in (False, True)],
                             {"lens_ptr": "*i32", "counter_ptr": "*i32", **_PARTIALS}, per_head_block=per_head_block,
                             per_form=lambda form: {"Q_IN_LOOP": _DEC_Q_IN_LOOP[form]})

    # short caches: _DEC_GPU fused, or separate for _DEC_SHORT_SEPARATE forms; long ones: a _DEC_GPU_LONG entry,
    # else _DEC_GPU with the separate combine
    separate = {form: cfg for form, cfg in _DEC_GPU.items()
                if form in _DEC_SHORT_SEPARATE or any(bd not in _DEC_GPU_LONG.get(form, {}) for bd in GPU_HEAD_BLOCKS)}
    out = split_variants((_DEC_GPU,), True) + split_variants((separate,), False)
    for form, by_block in _DEC_GPU_LONG.items():
        for fused in (True, False):
            picked = {bd: plan for bd, plan in by_block.items() if plan.fused == fused}
            if picked:  # head blocks without an entry of this kind repeat the _DEC_GPU config (deduplicated)
                table = {form: {bd: picked[bd].config if bd in picked else _pick(_DEC_GPU, form, bd)
                                for bd in GPU_HEAD_BLOCKS}}
                out += split_variants((table,), fused, picked.get)
    out = list({(v.name, tuple(sorted(v.constexprs.items()))): v for v in out}.values())
    for dt in ("fp32", "fp16", "bf16"):
        for BLOCK_D in GPU_HEAD_BLOCKS:
            out.append(AotVariant(
                f"_decode_combine_kernel[{dt},D={BLOCK_D}]", _decode_combine_kernel,
                _signature(_decode_combine_kernel, dt, _PARTIALS),
                {"BLOCK_S": COMBINE_BLOCK_S, "BLOCK_D": BLOCK_D, "PDL": True}, num_warps=COMBINE_WARPS,
                aligned_ints=_aligned_ints(_decode_combine_kernel)))
    return out


register(Kernel(
    name="sdpa_bidirectional", family="attention",
    doc="o = softmax(scale q k^T, keys with key_padding_mask False excluded) v; a row with no key outputs 0",
    make_inputs=_sdpa_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_bidirectional,
    oracle=sdpa_oracle, peer=sdpa_bidirectional_torch,
    cases=[
        Case({"B": 2, "H": 2, "T": 37, "D": 16}, _CPU, _INTERPRETABLE),
        Case({"B": 3, "H": 1, "T": 45, "D": 32, "lengths": (45, 29, 1)}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 2, "Tq": 20, "Tk": 64, "D": 64, "holes": True}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 1, "T": 33, "D": 32, "lengths": (33, 17), **_TF32}, _CPU, ("float32",)),
        Case({"B": 1, "H": 2, "T": 35, "D": 16, "lengths": (30,), **_TF32X3}, _CPU, _FP32),
        Case({"B": 1, "H": 1, "T": 32, "D": 16, **_TF32X3}, _CPU, _FP32),  # EVEN_K: keys a whole number of blocks
        # a SigLIP-style vision encoder: 576 tokens (24 x 24 patches), 16 heads x 64.
        Case({"B": 1, "H": 16, "T": 576, "D": 64}, _GPU),
        # ALBERT (Kokoro's PL-BERT): 12 heads x 64, up to 512 tokens, a ragged batch of utterances.
        Case({"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19)}, _GPU),
        Case({"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19), **_TF32}, _GPU, ("float32",)),
        Case({"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19), **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 16, "T": 576, "D": 64, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 4, "T": 1024, "D": 128, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 3, "Tq": 300, "Tk": 999, "D": 128, "holes": True, **_TF32X3}, _GPU, _FP32),
        # many programs at head dim 128, keys a whole number of blocks or not
        Case({"B": 4, "H": 33, "T": 256, "D": 128}, _GPU, ("float16", "bfloat16")),
        Case({"B": 2, "H": 85, "T": 200, "D": 128}, _GPU, ("float16", "bfloat16")),
        Case({"B": 2, "H": 3, "Tq": 200, "Tk": 333, "D": 48, "holes": True}, _GPU),
    ],
    bench=[
        *_bench_rows("ALBERT 512 tokens [1, 12, 512, 64]", {"B": 1, "H": 12, "T": 512, "D": 64},
                     _full_flops, _attention_bytes),
        *_bench_rows("ALBERT ragged batch [4, 12, 512, 64] with key padding",
                     {"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19)},
                     _full_flops, _attention_bytes),
        *_bench_rows("SigLIP 576 tokens [1, 16, 576, 64]", {"B": 1, "H": 16, "T": 576, "D": 64},
                     _full_flops, _attention_bytes),
        *_bench_rows("large [4, 16, 4096, 128]", {"B": 4, "H": 16, "T": 4096, "D": 128},
                     _full_flops, _attention_bytes),
    ],
    tol_kind="reduction", variants=lambda: _fwd_variants(((False, False), (True, False))),
))


def _windowed_flops(p):
    return 4 * p["B"] * p["H"] * p["D"] * sum(n * n for n in p["windows"])


def _windowed_bytes(p, itemsize):
    return _attention_bytes(p, itemsize, sum(p["windows"]), sum(p["windows"]))


_QWEN_WINDOWS = ragged_windows(1000, 64, seed=7)  # a Qwen2.5-VL image after window reordering, 64-token windows

register(Kernel(
    name="sdpa_bidirectional_windowed", family="attention",
    doc="o_i = softmax over keys j in [seg_start_i, seg_start_i + seg_len_i) of scale q_i k_j, times v",
    make_inputs=_windowed_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_bidirectional_windowed,
    oracle=sdpa_windowed_oracle, peer=sdpa_bidirectional_windowed_torch,
    cases=[
        Case({"B": 1, "H": 2, "D": 16, "windows": (16, 9, 20, 5)}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 1, "D": 32, "windows": (7, 33, 1, 23)}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 1, "D": 64, "windows": (3, 40, 21), **_TF32}, _CPU, ("float32",)),
        *[Case({"B": 1, "H": 16, "D": D, "windows": _QWEN_WINDOWS}, _GPU) for D in (64, 80, 128)],
        Case({"B": 2, "H": 4, "D": 80, "windows": ragged_windows(777, 100, seed=3)}, _GPU),
        Case({"B": 1, "H": 16, "D": 80, "windows": _QWEN_WINDOWS, **_TF32}, _GPU, ("float32",)),
        Case({"B": 1, "H": 16, "D": 80, "windows": _QWEN_WINDOWS, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 2, "D": 32, "windows": (5, 30, 12), **_TF32X3}, _CPU, _FP32),
    ],
    bench=[
        *_bench_rows("Qwen2.5-VL 1000 tokens in 64-token windows, 16 x 80",
                     {"B": 1, "H": 16, "D": 80, "windows": _QWEN_WINDOWS}, _windowed_flops, _windowed_bytes),
        *_bench_rows("large: 16384 tokens in 64-token windows, 16 x 80",
                     {"B": 1, "H": 16, "D": 80, "windows": (64,) * 256}, _windowed_flops, _windowed_bytes),
    ],
    tol_kind="reduction", variants=lambda: _fwd_variants(((False, True),)),
))


def _rel_pos_flops(p):
    return _full_flops(p) * 3 // 2


def _rel_pos_bytes(p, itemsize):
    return _attention_bytes(p, itemsize) + itemsize * p.get("rel_len", 2 * p["T"] - 1) * p["H"] * p["D"]


register(Kernel(
    name="sdpa_rel_pos_conformer", family="attention",
    doc="o = softmax_j(scale((q_i + u_h) k_j + (q_i + v_h) rel_emb[clamp(j + rel_zero - i, 0, rel_len - 1), h])) v",
    make_inputs=_rel_pos_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_rel_pos_conformer,
    oracle=sdpa_rel_pos_oracle, peer=sdpa_rel_pos_conformer_torch,
    cases=[
        Case({"B": 1, "H": 2, "H_kv": 1, "T": 37, "D": 16}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 4, "H_kv": 2, "T": 50, "D": 32, "rel_len": 21, "rel_zero": 10, "zero_bias": True},
             _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 1, "H_kv": 1, "T": 29, "D": 64, "rel_len": 64, "rel_zero": 40, **_TF32}, _CPU, ("float32",)),
        # Conformer encoders (e.g. 30 s of 50 Hz frames): 1,500 frames, 8 heads x 128, GQA 8 -> 2.
        Case({"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128}, _GPU),
        Case({"B": 2, "H": 8, "H_kv": 8, "T": 333, "D": 64, "rel_len": 129, "rel_zero": 64, "zero_bias": True}, _GPU),
        Case({"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128, **_TF32}, _GPU, ("float32",)),
        Case({"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 4, "H_kv": 4, "T": 200, "D": 64, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 2, "H_kv": 1, "T": 21, "D": 32, **_TF32X3}, _CPU, _FP32),
    ],
    bench=[
        *_bench_rows("conformer 1500 frames, 8 x 128, GQA 8/2", {"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128},
                     _rel_pos_flops, _rel_pos_bytes),
        *_bench_rows("large: 4 x 4000 frames, 8 x 128, GQA 8/2", {"B": 4, "H": 8, "H_kv": 2, "T": 4000, "D": 128},
                     _rel_pos_flops, _rel_pos_bytes),
    ],
    tol_kind="reduction", variants=_rel_pos_variants,
))


def _decode_keys(p):
    return min(p["T"], p.get("window") or p["T"])


def _decode_flops(p):
    return 4 * p["B"] * p["H"] * _decode_keys(p) * p["D"]


def _decode_bytes(p, itemsize):
    return itemsize * p["B"] * p["D"] * (2 * p["H_kv"] * _decode_keys(p) + 2 * p["H"])


_DECODE_MODEL = {"B": 1, "H": 64, "H_kv": 8}  # 64 query heads over 8 KV heads

register(Kernel(
    name="sdpa_decode_sink", family="attention",
    doc="one query per head over the KV cache plus a virtual key (logit sinks[h], value 0); optional window",
    make_inputs=_decode_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_decode_sink,
    oracle=sdpa_decode_sink_oracle, peer=sdpa_decode_sink_torch,
    cases=[
        Case({"B": 2, "H": 4, "H_kv": 2, "T": 64, "D": 16, "lens": (64, 23)}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 4, "H_kv": 1, "T": 50, "D": 32, "window": 20}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 2, "H_kv": 2, "T": 40, "D": 64, "lens": (37, 0), "window": 9}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 8, "H_kv": 1, "T": 48, "D": 32, **_TF32}, _CPU, ("float32",)),
        # 4k keys at both head dims with and without a window; 32k keys (the split-K case) at each head dim once
        *[Case({**_DECODE_MODEL, "T": 4096, "D": D, "window": w}, _GPU) for D in (64, 128) for w in (None, 128)],
        Case({**_DECODE_MODEL, "T": 32768, "D": 64, "window": None}, _GPU),
        Case({**_DECODE_MODEL, "T": 32768, "D": 128, "window": 128}, _GPU),
        Case({"B": 4, "H": 64, "H_kv": 8, "T": 4100, "D": 64, "lens": (4100, 3001, 17, 1), "window": 1000}, _GPU),
        Case({**_DECODE_MODEL, "T": 4096, "D": 128, **_TF32}, _GPU, ("float32",)),
        *[Case({**_DECODE_MODEL, "T": 32768, "D": D, **_TF32X3}, _GPU, _FP32) for D in (64, 128)],
        Case({"B": 2, "H": 64, "H_kv": 8, "T": 4100, "D": 64, "lens": (4100, 77), "window": 1000, **_TF32X3},
             _GPU, _FP32),
        Case({"B": 1, "H": 4, "H_kv": 2, "T": 40, "D": 32, "lens": (33,), **_TF32X3}, _CPU, _FP32),
    ],
    bench=[row for T, D, w in ((4096, 64, None), (32768, 64, None), (32768, 128, None), (32768, 64, 128))
           for row in _bench_rows(f"{T} cached keys, 64 q / 8 kv heads x {D}" + (f", window {w}" if w else ""),
                                  {**_DECODE_MODEL, "T": T, "D": D, "window": w}, _decode_flops, _decode_bytes)],
    tol_kind="reduction", variants=_decode_variants,
))
