"""Decode at 32k cached keys, head dim 64, fp16 (issue 5): where a call's time goes, and what was tried against it.

Every row is timed with time_cuda (the bench procedure: device spin, L2 flushed and cleaned, events around the
call; the better of two medians of 60) and given as % of the measured copy bandwidth for the cache's bytes.
Sections (benchmarks/RESULTS.md, session 4, has the H200 numbers):
  floors         torch copy of the same bytes; read-only Triton kernels with the split kernel's decomposition
                 (plain loads and TMA descriptors): the floor a split kernel can reach
  splits         the split kernel alone and with the combine at 1, 2, 4 warps, per split config; a TMA split
                 prototype
  timeline       per-program global-timer stamps of the split loop: when programs start and end (the spread of
                 end times is the tail), by launch slot, weighted work, interleaved key blocks, L2 bulk prefetch
  dynamic        chunks claimed at run time from a per-KV-head cursor (partial per chunk, deterministic), and
                 plain over-decomposition (more programs than fit)
  configs        more static split configs with the one-warp combine; a per-head signalled split with a
                 combine that spins on the head's counter instead of waiting for the whole grid (PDL)
  combine_warps  sdpa_decode_sink at h64 / h128, fp16 / bf16, by the combine's warp count
  fp32_long      float32 caches: split configs per dot form (tf32x3, ieee) and head dim
  launcher       sdpa_decode_sink as launched, with and without PDL, q in the loop or before it
Session 5 (RESULTS.md "session 5"):
  flat           one flat pipelined loop whose key blocks after the first STATIC are claimed from a per-KV-head
                 cursor (partial per program, or per claimed block: deterministic)
  tiles          the static form of that loop at one program per SM with larger tiles; who is slow (KV head,
                 split, the SM's other program)
  sm_stable      per-SM and per-program loop ends correlated across 16 runs (is a slow SM always slow?)
  sweep          read-only kernels by the order programs take the blocks; many short programs without a loop
  one            2,048 one-block programs and a one-step wide combine
  handoff        the split kernel alone, + the combine, + a combine that reads nothing; the fused merges
  qload          q before the loop, in it at every step, at the first step only (with first-step stamps)
  waves          big programs, then small ones the block scheduler hands to the SMs that finish first
  poll           a combine launched early that polls the partials for a sentinel instead of waiting (PDL)

    PYTHONPATH=. python3 benchmarks/diag_decode.py [section ...]       (default: floors splits launcher)
    TUNE_DRY=1 TRITON_INTERPRET=1 PYTHONPATH=. python benchmarks/diag_decode.py [section ...]   (CPU smoke run;
        the interpreter has no inline PTX: timeline needs the GPU)
"""
from __future__ import annotations

import os
import sys

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
from triton.tools.tensor_descriptor import TensorDescriptor

from tilewave.harness.timing import time_cuda
from tilewave.kernels import attention as A

COPY_GBPS = 4279.0  # measured device copy bandwidth (session 3)
DRY = os.environ.get("TUNE_DRY") == "1"
DEV = "cpu" if DRY else "cuda"
T, D, H, H_KV = (512, 64, 64, 8) if DRY else (32768, 64, 64, 8)


@triton.jit
def _read_split_kernel(k_ptr, v_ptr, out_ptr, T, chunk, D: tl.constexpr, BLOCK_N: tl.constexpr,
                       STAGES: tl.constexpr):
    # grid (H_kv, splits): the split kernel's key ranges, K and V tiles loaded and summed, nothing else
    hk = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    start = split * chunk
    end = tl.minimum(start + chunk, T)
    rows = tl.arange(0, BLOCK_N)
    d = tl.arange(0, D)
    acc = tl.zeros([BLOCK_N, D], tl.float32)
    for n in tl.range(start, end, BLOCK_N, num_stages=STAGES):
        ok = (n + rows < end)[:, None]
        off = (hk * T + n + rows)[:, None] * D + d[None, :]
        acc += tl.load(k_ptr + off, mask=ok, other=0.0).to(tl.float32)
        acc += tl.load(v_ptr + off, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + hk * tl.num_programs(1) + split, tl.sum(tl.sum(acc, 1), 0))


@triton.jit
def _read_flat_kernel(x_ptr, out_ptr, n, per_prog, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # P programs, each a contiguous 1/P of the buffer (16-bit elements)
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * per_prog
    end = tl.minimum(start + per_prog, n)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in tl.range(start, end, BLOCK, num_stages=STAGES):
        acc += tl.load(x_ptr + i + offs, mask=i + offs < end, other=0.0).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc, 0))


@triton.jit
def _read_sweep_kernel(k_ptr, v_ptr, out_ptr, n_blocks, per_head, D: tl.constexpr, BLOCK_N: tl.constexpr,
                       MODE: tl.constexpr, STAGES: tl.constexpr):
    # grid (P,): P programs read the [H_kv·T, D] K and V caches in [BLOCK_N, D] blocks, n_blocks each, every
    # block once. MODE 0: program p a contiguous run (the split kernel's order); 1: the programs of a KV head
    # (P / H_kv of them) take its blocks in turn (a front per head and cache); 2: all programs take the
    # blocks in turn (grid-stride: one front through each cache, like a copy kernel's)
    p = tl.program_id(0)
    P = tl.num_programs(0)
    per = n_blocks // P
    rows = tl.arange(0, BLOCK_N)
    d = tl.arange(0, D)
    acc = tl.zeros([BLOCK_N, D], tl.float32)
    for i in tl.range(0, per, num_stages=STAGES):
        if MODE == 0:
            blk = p * per + i
        elif MODE == 1:
            per_head_progs = P // (n_blocks // per_head)
            blk = (p // per_head_progs) * per_head + p % per_head_progs + i * per_head_progs
        else:
            blk = p + i * P
        off = (blk.to(tl.int64) * BLOCK_N + rows)[:, None] * D + d[None, :]
        acc += tl.load(k_ptr + off).to(tl.float32)
        acc += tl.load(v_ptr + off).to(tl.float32)
    tl.store(out_ptr + p, tl.sum(tl.sum(acc, 1), 0))


@triton.jit
def _read_small_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # a copy kernel's shape without the write: many short programs, one BLOCK-element tile each, no loop (the
    # block scheduler hands the next program to whichever SM frees a slot first)
    p = tl.program_id(0)
    x = tl.load(x_ptr + p.to(tl.int64) * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + p, tl.sum(x.to(tl.float32), 0))


@triton.jit
def _read_split_tma_kernel(k_desc, v_desc, out_ptr, T, chunk, D: tl.constexpr, BLOCK_N: tl.constexpr,
                           STAGES: tl.constexpr):
    # _read_split_kernel through TMA descriptors over [H_kv·T, D]
    hk = tl.program_id(0)
    split = tl.program_id(1)
    start = split * chunk
    end = tl.minimum(start + chunk, T)
    acc = tl.zeros([BLOCK_N, D], tl.float32)
    for n in tl.range(start, end, BLOCK_N, num_stages=STAGES):
        acc += k_desc.load([hk * T + n, 0]).to(tl.float32)
        acc += v_desc.load([hk * T + n, 0]).to(tl.float32)
    tl.store(out_ptr + hk * tl.num_programs(1) + split, tl.sum(tl.sum(acc, 1), 0))


@triton.jit
def _proto_q(q_ptr, hk, GROUP, D, BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr):
    # the prototypes' tile (batch 1): the query rows of KV head hk's GQA group, padded to BLOCK_G rows
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    heads = hk * GROUP + g
    q = tl.load(q_ptr + heads[:, None] * D + d[None, :], mask=(g < GROUP)[:, None], other=0.0)
    return q, heads, g < GROUP, d


@triton.jit
def _proto_step(q, k, v, m_i, l_i, acc, qk_scale):
    return A._online_softmax_step(tl.dot(q, tl.trans(k)) * qk_scale, m_i, l_i, acc, v, "tf32")


@triton.jit
def _proto_keys(q, k_ptr, v_ptr, base, start, end, D, d, qk_scale, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_D: tl.constexpr):
    # (max, sum, acc) over keys start .. end (whole BLOCK_N tiles) of the head whose K/V start at base
    cols = tl.arange(0, BLOCK_N)
    m_i, l_i, acc = A._softmax_start(BLOCK_G, BLOCK_D)
    for n in range(start, end, BLOCK_N):
        off = base + (n + cols)[:, None] * D + d[None, :]
        m_i, l_i, acc = _proto_step(q, tl.load(k_ptr + off), tl.load(v_ptr + off), m_i, l_i, acc, qk_scale)
    return m_i, l_i, acc


@triton.jit
def _proto_store(part_ptr, slot, n_slots, H, D, heads, g_ok, d, m_i, l_i, acc):
    # the partial of slot `slot` of n_slots per head, in _decode_split_kernel's layout
    rows_total = H * n_slots
    part = heads * n_slots + slot
    tl.store(part_ptr + rows_total * D + part, m_i, mask=g_ok)
    tl.store(part_ptr + rows_total * (D + 1) + part, l_i, mask=g_ok)
    tl.store(part_ptr + part[:, None] * D + d[None, :], acc, mask=g_ok[:, None])


@triton.jit
def _split_tma_kernel(q_ptr, k_desc, v_desc, part_ptr, H, GROUP, T, D, chunk, num_splits, qk_scale,
                      BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PDL: tl.constexpr):
    # _decode_split_kernel (batch 1, no lengths, no window, partials only) with K/V tiles through TMA
    if PDL:
        gdc_launch_dependents()
    hk = tl.program_id(0)
    split = tl.program_id(1)
    start = split * chunk
    end = tl.minimum(start + chunk, T)
    q, heads, g_ok, d = _proto_q(q_ptr, hk, GROUP, D, BLOCK_G, BLOCK_D)
    m_i, l_i, acc = A._softmax_start(BLOCK_G, BLOCK_D)
    for n in range(start, end, BLOCK_N):
        m_i, l_i, acc = _proto_step(q, k_desc.load([hk * T + n, 0]), v_desc.load([hk * T + n, 0]), m_i, l_i, acc,
                                    qk_scale)
    _proto_store(part_ptr, split, num_splits, H, D, heads, g_ok, d, m_i, l_i, acc)


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _smid():
    return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _prefetch_l2(ptr, nbytes, NT: tl.constexpr):
    # one thread asks the L2 to fetch nbytes from ptr (sm_90 bulk prefetch; no shared memory, no registers)
    who = tl.arange(0, NT)
    addr = ptr + tl.zeros([NT], tl.int64)
    size = tl.zeros([NT], tl.int32) + nbytes
    tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.eq.s32 p, $2, 0; @p cp.async.bulk.prefetch.L2.global [$1], $3; mov.u32 $0, 0; }",
        "=r,l,r,r", [addr, who, size], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _split_timeline_kernel(q_ptr, k_ptr, v_ptr, part_ptr, stamp_ptr, H, GROUP, T, D, chunk, num_splits, qk_scale,
                           BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, READ_ONLY: tl.constexpr,
                           SLOTS=0, A_BLOCKS=0, B_BLOCKS=0, INTERLEAVE: tl.constexpr = False,
                           PREFETCH: tl.constexpr = 0, NT: tl.constexpr = 128):
    # _decode_split_kernel's loop (batch 1, no lengths or window, partials only) with global-timer stamps per
    # program: start, loop end, end (after the partial stores), and its SM. READ_ONLY: K/V loaded and summed.
    t0 = _now()
    hk = tl.program_id(0)
    split = tl.program_id(1)
    start = split * chunk
    end = tl.minimum(start + chunk, T)
    if SLOTS > 0:
        # weighted: the programs launched first (linear id < SLOTS, one per SM) take A_BLOCKS key blocks, the
        # ones launched after (an SM's second program) B_BLOCKS
        n_old = (SLOTS - hk + tl.num_programs(0) - 1) // tl.num_programs(0)
        start = (tl.minimum(split, n_old) * A_BLOCKS + tl.maximum(split - n_old, 0) * B_BLOCKS) * BLOCK_N
        end = tl.minimum(start + tl.where(split < n_old, A_BLOCKS, B_BLOCKS) * BLOCK_N, T)
        end = tl.where(split == num_splits - 1, T, end)
    cols = tl.arange(0, BLOCK_N)
    q, heads, g_ok, d = _proto_q(q_ptr, hk, GROUP, D, BLOCK_G, BLOCK_D)
    m_i, l_i, acc = A._softmax_start(BLOCK_G, BLOCK_D)
    racc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    base = hk.to(tl.int64) * T * D
    step = BLOCK_N
    if INTERLEAVE:  # the splits of a head take its key blocks in turn: together they sweep K and V front to back
        start = split * BLOCK_N
        end = T
        step = num_splits * BLOCK_N
    for n in range(start, end, step):
        if PREFETCH > 0:  # the K and V tiles PREFETCH steps ahead, into the L2
            ahead = n + PREFETCH * step
            if ahead < end:
                _prefetch_l2(k_ptr + base + ahead * D, BLOCK_N * BLOCK_D * 2, NT)
                _prefetch_l2(v_ptr + base + ahead * D, BLOCK_N * BLOCK_D * 2, NT)
        off = base + (n + cols)[:, None] * D + d[None, :]
        k = tl.load(k_ptr + off)
        v = tl.load(v_ptr + off)
        if READ_ONLY:
            racc += k.to(tl.float32) + v.to(tl.float32)
        else:
            m_i, l_i, acc = _proto_step(q, k, v, m_i, l_i, acc, qk_scale)
    t1 = _now()
    if READ_ONLY:
        tl.store(part_ptr + heads * num_splits + split, tl.sum(tl.sum(racc, 1), 0), mask=g_ok)
    else:
        _proto_store(part_ptr, split, num_splits, H, D, heads, g_ok, d, m_i, l_i, acc)
    t2 = _now()
    pid = hk * num_splits + split
    tl.store(stamp_ptr + pid * 4 + 0, t0)
    tl.store(stamp_ptr + pid * 4 + 1, t1)
    tl.store(stamp_ptr + pid * 4 + 2, t2)
    tl.store(stamp_ptr + pid * 4 + 3, _smid().to(tl.int64))


@triton.jit
def _split_dyn_kernel(q_ptr, k_ptr, v_ptr, part_ptr, cursor_ptr, H, GROUP, T, D, n_chunks, CHUNK, qk_scale,
                      BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PDL: tl.constexpr):
    # persistent programs of a KV head claim chunks of CHUNK keys from the head's cursor (the next claim made
    # while the current chunk runs); each chunk's partial goes to the chunk's own slot, so the output does not
    # depend on which program ran which chunk. Batch 1, no lengths or window; the cursors are reset by the host.
    if PDL:
        gdc_launch_dependents()
    hk = tl.program_id(0)
    q, heads, g_ok, d = _proto_q(q_ptr, hk, GROUP, D, BLOCK_G, BLOCK_D)
    base = hk.to(tl.int64) * T * D
    c = tl.atomic_add(cursor_ptr + hk, 1, sem="relaxed")
    while c < n_chunks:
        c_next = tl.atomic_add(cursor_ptr + hk, 1, sem="relaxed")
        # CHUNK is a multiple of BLOCK_N and T of CHUNK here
        m_i, l_i, acc = _proto_keys(q, k_ptr, v_ptr, base, c * CHUNK, tl.minimum((c + 1) * CHUNK, T), D, d, qk_scale,
                                    BLOCK_G, BLOCK_N, BLOCK_D)
        _proto_store(part_ptr, c, n_chunks, H, D, heads, g_ok, d, m_i, l_i, acc)
        c = c_next


@triton.jit
def _split_one_kernel(q_ptr, k_ptr, v_ptr, part_ptr, H, GROUP, T, D, n_slots, qk_scale, BLOCK_G: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, NB: tl.constexpr, HEADS_INNER: tl.constexpr,
                      EVICT: tl.constexpr, PDL: tl.constexpr):
    # many short programs, as a copy kernel has: program (KV head, slot) reads NB key blocks of BLOCK_N keys
    # (no loop: every load is issued at once), one partial per program; the block scheduler gives the next
    # program to whichever SM frees a slot first, which balances SMs of unequal speed. Batch 1, no lengths.
    if PDL:
        gdc_launch_dependents()
    pid = tl.program_id(0)
    H_kv = H // GROUP
    if HEADS_INNER:  # consecutive programs: the KV heads of one slot
        hk = pid % H_kv
        slot = pid // H_kv
    else:
        hk = pid // n_slots
        slot = pid % n_slots
    q, heads, g_ok, d = _proto_q(q_ptr, hk, GROUP, D, BLOCK_G, BLOCK_D)
    cols = tl.arange(0, BLOCK_N)
    base = hk.to(tl.int64) * T * D
    m_i, l_i, acc = A._softmax_start(BLOCK_G, BLOCK_D)
    for b in tl.static_range(NB):
        off = base + ((slot * NB + b) * BLOCK_N + cols)[:, None] * D + d[None, :]
        k = tl.load(k_ptr + off, eviction_policy=EVICT)
        v = tl.load(v_ptr + off, eviction_policy=EVICT)
        m_i, l_i, acc = _proto_step(q, k, v, m_i, l_i, acc, qk_scale)
    _proto_store(part_ptr, slot, n_slots, H, D, heads, g_ok, d, m_i, l_i, acc)


@triton.jit
def _combine_wide_kernel(part_ptr, sink_ptr, o_ptr, soh, H, D, n_slots, BLOCK_S: tl.constexpr,
                         SLICE: tl.constexpr, PDL: tl.constexpr):
    # grid (H, D / SLICE): one head's n_slots (<= BLOCK_S) partials folded in one step for SLICE columns
    h = tl.program_id(0)
    c0 = tl.program_id(1) * SLICE
    sink = tl.load(sink_ptr + h).to(tl.float32) * 1.4426950408889634
    if PDL:
        gdc_wait()
    sp = tl.arange(0, BLOCK_S)
    ok = sp < n_slots
    c = c0 + tl.arange(0, SLICE)
    rows_total = H * n_slots
    row = h * n_slots + sp
    m_s = tl.load(part_ptr + rows_total * D + row, mask=ok, other=float("-inf"))
    l_s = tl.load(part_ptr + rows_total * (D + 1) + row, mask=ok, other=0.0)
    a_s = tl.load(part_ptr + row[:, None] * D + c[None, :], mask=ok[:, None], other=0.0)
    m = tl.maximum(tl.max(m_s, 0), sink)
    w = tl.exp2(m_s - m)
    l = tl.sum(l_s * w, 0) + tl.exp2(sink - m)
    acc = tl.sum(a_s * w[:, None], 0)
    tl.store(o_ptr + h * soh + c, (acc / l).to(o_ptr.dtype.element_ty))


@triton.jit
def _combine_empty_kernel(sink_ptr, o_ptr, soh, D, BLOCK_D: tl.constexpr, PDL: tl.constexpr):
    # the combine's hand-off alone: wait for the split grid (PDL), store a row, read no partial
    h = tl.program_id(0)
    sink = tl.load(sink_ptr + h)
    if PDL:
        gdc_wait()
    d = tl.arange(0, BLOCK_D)
    tl.store(o_ptr + h * soh + d, (sink + tl.zeros([BLOCK_D], tl.float32)).to(o_ptr.dtype.element_ty), mask=d < D)


@triton.jit
def _split_waves_kernel(q_ptr, k_ptr, v_ptr, part_ptr, H, GROUP, T, D, n_big, big_blocks, small_blocks, n_slots,
                        qk_scale, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                        PDL: tl.constexpr):
    # grid (H_kv, n_big + n_small): the first n_big programs of each KV head take big_blocks key blocks each,
    # the rest small_blocks each, after them. The block scheduler starts programs in order of linear id (the KV
    # head fastest), so the big ones fill the GPU and a small one starts wherever a big one ended first: SMs that
    # read faster take more of the tail. Every program's range is fixed (a partial per program, deterministic).
    if PDL:
        gdc_launch_dependents()
    hk = tl.program_id(0)
    split = tl.program_id(1)
    q, heads, g_ok, d = _proto_q(q_ptr, hk, GROUP, D, BLOCK_G, BLOCK_D)
    if split < n_big:
        first = split * big_blocks
        nb = big_blocks
    else:
        first = n_big * big_blocks + (split - n_big) * small_blocks
        nb = small_blocks
    nb = tl.minimum(nb, T // BLOCK_N - first)
    cols = tl.arange(0, BLOCK_N)
    base = hk.to(tl.int64) * T * D
    m_i, l_i, acc = A._softmax_start(BLOCK_G, BLOCK_D)
    for i in range(0, nb):
        off = base + ((first + i) * BLOCK_N + cols)[:, None] * D + d[None, :]
        m_i, l_i, acc = _proto_step(q, tl.load(k_ptr + off), tl.load(v_ptr + off), m_i, l_i, acc, qk_scale)
    _proto_store(part_ptr, split, n_slots, H, D, heads, g_ok, d, m_i, l_i, acc)


_SENTINEL: tl.constexpr = tl.constexpr(-4523347)  # 0xFFBADBAD as int32: a NaN no float arithmetic produces


@triton.jit
def _poll_partials(m_ptrs, l_ptrs, a_ptrs, ok, a_ok):
    # one read of a head's partials past L1, and how many of their words still hold the sentinel
    m_s = tl.load(m_ptrs, mask=ok, other=0.0, volatile=True)
    l_s = tl.load(l_ptrs, mask=ok, other=0.0, volatile=True)
    a_s = tl.load(a_ptrs, mask=a_ok, other=0.0, volatile=True)
    pending = (tl.sum((m_s.to(tl.int32, bitcast=True) == _SENTINEL).to(tl.int32), 0)
               + tl.sum((l_s.to(tl.int32, bitcast=True) == _SENTINEL).to(tl.int32), 0)
               + tl.sum(tl.sum((a_s.to(tl.int32, bitcast=True) == _SENTINEL).to(tl.int32), 1), 0))
    return m_s, l_s, a_s, pending


@triton.jit
def _combine_poll_kernel(part_ptr, sink_ptr, o_ptr, soh, H, D, n_slots, BLOCK_S: tl.constexpr,
                         BLOCK_D: tl.constexpr, SLEEP: tl.constexpr):
    # The combine without waiting for the split grid: launched as a programmatic dependent (so every split
    # program is already resident) it never calls gdc_wait; it re-reads its head's partials (past L1) until
    # none holds the sentinel bit pattern the previous call left there, folds them and puts the sentinel back.
    # Each partial word is written once per call, so a word that is not the sentinel is final: no fence, no
    # counter. Batch 1.
    h = tl.program_id(0)
    sink = tl.load(sink_ptr + h).to(tl.float32) * 1.4426950408889634
    sp = tl.arange(0, BLOCK_S)
    ok = sp < n_slots
    d = tl.arange(0, BLOCK_D)
    d_ok = d < D
    rows_total = H * n_slots
    row = h * n_slots + sp
    m_ptrs = part_ptr + rows_total * D + row
    l_ptrs = part_ptr + rows_total * (D + 1) + row
    a_ptrs = part_ptr + row[:, None] * D + d[None, :]
    a_ok = ok[:, None] & d_ok[None, :]
    m_s, l_s, a_s, pending = _poll_partials(m_ptrs, l_ptrs, a_ptrs, ok, a_ok)
    while pending > 0:
        if SLEEP > 0:
            tl.inline_asm_elementwise("nanosleep.u32 $1; mov.u32 $0, 0;", "=r,r", [tl.full([1], SLEEP, tl.int32)],
                                      dtype=tl.int32, is_pure=False, pack=1)
        m_s, l_s, a_s, pending = _poll_partials(m_ptrs, l_ptrs, a_ptrs, ok, a_ok)
    m_s = tl.where(ok, m_s, float("-inf"))
    m = tl.maximum(tl.max(m_s, 0), sink)
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(m_s - m_safe)
    l = tl.sum(l_s * w, 0) + tl.exp2(sink - m_safe)
    acc = tl.sum(a_s * w[:, None], 0)
    tl.store(o_ptr + h * soh + d, (acc / tl.where(l == 0.0, 1.0, l)).to(o_ptr.dtype.element_ty), mask=d_ok)
    tl.store(m_ptrs, tl.full([BLOCK_S], _SENTINEL, tl.int32).to(tl.float32, bitcast=True), mask=ok)
    tl.store(l_ptrs, tl.full([BLOCK_S], _SENTINEL, tl.int32).to(tl.float32, bitcast=True), mask=ok)
    tl.store(a_ptrs, tl.full([BLOCK_S, BLOCK_D], _SENTINEL, tl.int32).to(tl.float32, bitcast=True), mask=a_ok)


@triton.jit
def _split_signal_kernel(q_ptr, k_ptr, v_ptr, part_ptr, count_ptr, H, GROUP, T, D, chunk, num_splits, qk_scale,
                         BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PDL: tl.constexpr):
    # the split kernel's loop (batch 1, no lengths or window); after its partials, each program counts itself
    # done on its KV head's counter (release), so the combine of that head can start before the grid ends
    if PDL:
        gdc_launch_dependents()
    hk = tl.program_id(0)
    split = tl.program_id(1)
    start = split * chunk
    end = tl.minimum(start + chunk, T)
    q, heads, g_ok, d = _proto_q(q_ptr, hk, GROUP, D, BLOCK_G, BLOCK_D)
    m_i, l_i, acc = _proto_keys(q, k_ptr, v_ptr, hk.to(tl.int64) * T * D, start, end, D, d, qk_scale, BLOCK_G, BLOCK_N,
                                BLOCK_D)
    _proto_store(part_ptr, split, num_splits, H, D, heads, g_ok, d, m_i, l_i, acc)
    tl.debug_barrier()
    tl.atomic_add(count_ptr + hk, 1, sem="release", scope="gpu")


@triton.jit
def _combine_spin_kernel(part_ptr, sink_ptr, o_ptr, count_ptr, done_ptr, sob, soh, H, GROUP, D, num_splits,
                         BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    # the combine, started early (PDL) and waiting on its KV head's counter instead of the whole split grid;
    # the last combine program of a KV head zeroes its counters for the next launch
    h = tl.program_id(0)
    hk = h // GROUP
    sink = tl.load(sink_ptr + h).to(tl.float32) * 1.4426950408889634
    arrived = tl.atomic_add(count_ptr + hk, 0, sem="acquire", scope="gpu")
    while arrived < num_splits:
        arrived = tl.atomic_add(count_ptr + hk, 0, sem="acquire", scope="gpu")
    d = tl.arange(0, BLOCK_D)
    out = A._fold_splits(part_ptr, h * num_splits, num_splits, H * num_splits, D, sink, d, d < D, BLOCK_S, BLOCK_D)
    tl.store(o_ptr + h * soh + d, out.to(o_ptr.dtype.element_ty), mask=d < D)
    tl.debug_barrier()
    if tl.atomic_add(done_ptr + hk, 1, sem="acq_rel", scope="gpu") == GROUP - 1:
        tl.store(count_ptr + hk, 0)
        tl.store(done_ptr + hk, 0)


@triton.jit
def _split_flat_kernel(q_ptr, k_ptr, v_ptr, part_ptr, cursor_ptr, stamp_ptr, H, GROUP, T, D, n_blocks, n_iter,
                       num_splits, n_slots, qk_scale, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_D: tl.constexpr, STATIC: tl.constexpr, DET: tl.constexpr, PDL: tl.constexpr,
                       STAMP: tl.constexpr, QMODE: tl.constexpr = 0, WORK: tl.constexpr = 0):
    # Run-time balancing in one flat loop: program `split` of KV head hk takes key blocks split·STATIC ..
    # split·STATIC + STATIC - 1, then blocks claimed from the head's cursor (block STATIC·num_splits onwards),
    # each claim made one iteration before its block is used: the claim is a loop-carried value of distance 1,
    # which Triton's pipeliner schedules with the loads (a deeper rotation of claims is not pipelined), so the
    # cp.async stages run on across claims. n_iter iterations; past the last claim the loads are masked off.
    # DET: the output does not depend on which program took which block: the static blocks' partial goes to
    # slot `split`, each claimed block's to its own slot (num_splits + its index among the claimed ones);
    # otherwise one partial per program (slot `split`) over whatever it took. Slots per head: n_slots (DET:
    # num_splits if STATIC > 0, plus one per claimed block).
    # Batch 1, no lengths or window; the combine resets the cursors. QMODE: q loaded before the loop (0), in
    # the loop at every step (1: the pipeliner fetches it with K/V), in the loop at the first step only (2).
    # STAMP: global-timer stamps per program (start, end of the first step, loop end; its SM; blocks taken).
    if STAMP:
        t0 = _now()
        t_first = t0
    if PDL:
        gdc_launch_dependents()
    hk = tl.program_id(0)
    split = tl.program_id(1)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    heads = hk * GROUP + g
    g_ok = g < GROUP
    q_ptrs = q_ptr + heads[:, None] * D + d[None, :]
    if QMODE == 0:
        q = tl.load(q_ptrs, mask=g_ok[:, None], other=0.0)
    else:
        q = tl.zeros([BLOCK_G, BLOCK_D], q_ptr.dtype.element_ty)
    cols = tl.arange(0, BLOCK_N)
    base = hk.to(tl.int64) * T * D
    m_i, l_i, acc = A._softmax_start(BLOCK_G, BLOCK_D)
    if WORK == 5:  # rows r and r + BLOCK_G / 2 both hold head r (GROUP == BLOCK_G / 2)
        q2 = tl.load(q_ptr + (hk * GROUP + g % GROUP)[:, None] * D + d[None, :])
    dyn0 = STATIC * num_splits
    if STATIC > 0:
        blk = split * STATIC
    else:
        blk = dyn0 + tl.atomic_add(cursor_ptr + hk, 1, sem="relaxed")
    rows_total = H * n_slots
    first_claimed = 0  # slot of the first claimed block's partial (DET): after the static ones, if any
    if STATIC > 0:
        first_claimed = num_splits
    done = 0
    for i in range(0, n_iter):
        j = i + 1
        claim = tl.atomic_add(cursor_ptr + hk, 1, sem="relaxed", mask=(j >= STATIC) & (j < n_iter))
        cur = blk
        blk = tl.where(j < STATIC, split * STATIC + j, dyn0 + claim)
        ok = cur < n_blocks
        if DET:  # a claimed block starts from an empty state
            fresh = i >= STATIC
            m_i = tl.where(fresh, float("-inf"), m_i)
            l_i = tl.where(fresh, 0.0, l_i)
            acc = tl.where(fresh, 0.0, acc)
        off = base + (cur * BLOCK_N + cols)[:, None] * D + d[None, :]
        if QMODE == 1:
            q = tl.load(q_ptrs, mask=g_ok[:, None] & ok, other=0.0)
        elif QMODE == 2:
            q = q + tl.load(q_ptrs, mask=g_ok[:, None] & (i == 0), other=0.0)
        k = tl.load(k_ptr + off, mask=ok, other=0.0)
        v = tl.load(v_ptr + off, mask=ok, other=0.0)
        if WORK == 0:
            s = tl.where(ok, tl.dot(q, tl.trans(k)) * qk_scale, float("-inf"))
            m_i, l_i, acc = A._online_softmax_step(s, m_i, l_i, acc, v, "tf32")
        elif WORK == 4:  # every key valid: the scale folded into exp2's FMA, no -inf handling
            m_i, l_i, acc = A._online_softmax_step_unmasked(tl.dot(q, tl.trans(k)), qk_scale, m_i, l_i, acc, v,
                                                            "tf32")
        elif WORK == 5:  # paired halves: rows r and r + GROUP hold the same head (GROUP == BLOCK_G / 2), the
            # first half of the block's keys for rows < GROUP, the second half for the others: one softmax over
            # [BLOCK_G, BLOCK_N / 2] per block (no padding rows), two independent running states merged after the
            # loop
            HALF: tl.constexpr = BLOCK_N // 2
            hc = tl.arange(0, HALF)
            lo = base + (cur * BLOCK_N + hc)[:, None] * D + d[None, :]
            hi = lo + HALF * D
            first_half = (g < BLOCK_G // 2)[:, None]
            s_lo = tl.dot(q2, tl.trans(tl.load(k_ptr + lo, mask=ok, other=0.0)))
            s_hi = tl.dot(q2, tl.trans(tl.load(k_ptr + hi, mask=ok, other=0.0)))
            s_raw = tl.where(first_half, s_lo, s_hi)
            m_new = tl.maximum(m_i, tl.max(s_raw, 1) * qk_scale)
            p = tl.exp2(s_raw * qk_scale - m_new[:, None])
            alpha = tl.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            p16 = p.to(q2.dtype)
            acc = acc * alpha[:, None]
            acc = tl.dot(tl.where(first_half, p16, 0.0), tl.load(v_ptr + lo, mask=ok, other=0.0), acc)
            acc = tl.dot(tl.where(first_half, 0.0, p16), tl.load(v_ptr + hi, mask=ok, other=0.0), acc)
            m_i = m_new
        elif WORK == 1:  # timing only (wrong output): both dots, no softmax
            acc = tl.dot((tl.dot(q, tl.trans(k)) * qk_scale).to(v.dtype), v, acc)
        elif WORK == 2:  # timing only: both dots, independent of each other (no chain through the scores)
            ones = tl.full([BLOCK_G, BLOCK_N], 1.0, v.dtype)
            acc = tl.dot(ones, v, acc) + tl.sum(tl.dot(q, tl.trans(k)), 1)[:, None]
        else:  # timing only: K and V only summed (by dots with ones, so that the pipeliner still fetches them)
            ones = tl.full([BLOCK_G, BLOCK_N], 1.0, v.dtype)
            acc = tl.dot(ones, v, acc) + tl.dot(ones, k)
        done += ok.to(tl.int32)
        if STAMP:
            if i == 0:
                t_first = _now()
        if DET:  # the static partial after its last block, a claimed block's after it
            slot = tl.where(i >= STATIC, first_claimed + cur - dyn0, split)
            put = ok & (i >= STATIC - 1)
            part = heads * n_slots + slot
            tl.store(part_ptr + rows_total * D + part, m_i, mask=g_ok & put)
            tl.store(part_ptr + rows_total * (D + 1) + part, l_i, mask=g_ok & put)
            tl.store(part_ptr + part[:, None] * D + d[None, :], acc, mask=g_ok[:, None] & put)
    if STAMP:
        t1 = _now()
    if WORK == 5:  # merge each head's two running states (rows r and r + GROUP)
        m2 = tl.reshape(m_i, [2, BLOCK_G // 2])
        mm = tl.max(m2, 0)
        w = tl.exp2(m2 - mm[None, :])
        l_h = tl.sum(tl.reshape(l_i, [2, BLOCK_G // 2]) * w, 0)
        acc_h = tl.sum(tl.reshape(acc, [2, BLOCK_G // 2, BLOCK_D]) * w[:, :, None], 0)
        g8 = tl.arange(0, BLOCK_G // 2)
        _proto_store(part_ptr, split, n_slots, H, D, hk * GROUP + g8, g8 < GROUP, d, mm, l_h, acc_h)
    elif not DET:
        _proto_store(part_ptr, split, n_slots, H, D, heads, g_ok, d, m_i, l_i, acc)
    if STAMP:
        pid = hk * num_splits + split
        tl.store(stamp_ptr + pid * 5 + 0, t0)
        tl.store(stamp_ptr + pid * 5 + 1, t1)
        tl.store(stamp_ptr + pid * 5 + 2, done.to(tl.int64))
        tl.store(stamp_ptr + pid * 5 + 3, _smid().to(tl.int64))
        tl.store(stamp_ptr + pid * 5 + 4, t_first)


@triton.jit
def _combine_reset_kernel(part_ptr, sink_ptr, o_ptr, cursor_ptr, sob, soh, H, GROUP, D, n_slots,
                          BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, PDL: tl.constexpr):
    # the library's combine (batch 1) over n_slots partials per head; the first head of each GQA group zeroes
    # its KV head's cursor for the next launch (the split grid is complete after the wait)
    h = tl.program_id(0)
    sink = tl.load(sink_ptr + h).to(tl.float32) * 1.4426950408889634
    if PDL:
        gdc_wait()
    if h % GROUP == 0:
        tl.store(cursor_ptr + h // GROUP, 0)
    d = tl.arange(0, BLOCK_D)
    out = A._fold_splits(part_ptr, h * n_slots, n_slots, H * n_slots, D, sink, d, d < D, BLOCK_S, BLOCK_D)
    tl.store(o_ptr + h * soh + d, out.to(o_ptr.dtype.element_ty), mask=d < D)


def timed(fn) -> float:
    fn()
    if DRY:
        return float("nan")
    torch.cuda.synchronize()
    return min(time_cuda(fn, warmup=10, reps=60).median_us for _ in range(2))


def report(label: str, us: float, nbytes: int) -> None:
    print(f"  {label:<58} {us:8.2f} µs  {nbytes / us / 1e3 / COPY_GBPS:6.1%} of copy BW", flush=True)


def setup() -> dict:
    gen = torch.Generator(DEV).manual_seed(0)
    q = torch.randn((1, H, D), generator=gen, device=DEV).half()
    kc = torch.randn((1, H_KV, T, D), generator=gen, device=DEV).half()
    vc = torch.randn((1, H_KV, T, D), generator=gen, device=DEV).half()
    sinks = torch.randn((H,), generator=gen, device=DEV)
    ref = A.sdpa_decode_sink_oracle(q.double(), kc.double(), vc.double(), sinks.double())
    sms = 64 if DRY else torch.cuda.get_device_properties(0).multi_processor_count
    return {"q": q, "kc": kc, "vc": vc, "sinks": sinks, "ref": ref, "out": torch.empty_like(q), "sms": sms,
            "nbytes": kc.numel() * 2 * 2, "red": torch.empty(H_KV * 4096, device=DEV)}


def library_split(P: dict, cfg: tuple, splits: int, chunk: int, parts: torch.Tensor, pdl: bool) -> None:
    """_decode_split_kernel alone (separate-combine form, batch 1, no lengths or window) at config cfg."""
    q, kc, vc, sinks, out = P["q"], P["kc"], P["vc"], P["sinks"], P["out"]
    plan = A._decode_plan(kc.device, kc.dtype, "tf32", 64, T)
    block_n, warps, stages = cfg
    A._decode_split_kernel[(H_KV, splits)](
        q, kc, vc, q, sinks, out, parts, parts, *q.stride()[:2], *kc.stride()[:3], *vc.stride()[:3],
        *out.stride()[:2], 1, H, H_KV, H // H_KV, 1, T, D, T, chunk, splits, A._scale(None, D),
        HAS_LENS=False, FUSED_COMBINE=False, BLOCK_G=A.DECODE_BLOCK_G, BLOCK_N=block_n, BLOCK_D=64,
        PRECISION="tf32", PDL=pdl, Q_IN_LOOP=plan.q_in_loop, **A._merge_constexprs(64, plan.merge),
        num_warps=warps, num_stages=stages)


def library_combine(P: dict, parts: torch.Tensor, splits: int, pdl: bool, warps: int = A.COMBINE_WARPS) -> None:
    """_decode_combine_kernel on `splits` partials per head (batch 1)."""
    out = P["out"]
    A._decode_combine_kernel[(H,)](parts, P["sinks"], out, *out.stride()[:2], 1, H, D, splits,
                                   BLOCK_S=A.COMBINE_BLOCK_S, BLOCK_D=64, PDL=pdl, num_warps=warps, launch_pdl=pdl)


def check(label: str, out: torch.Tensor, ref: torch.Tensor) -> None:
    err = (out.double() - ref).abs().max().item()
    if not err < 1e-3:
        print(f"    WRONG: {label}: max abs err {err:.2e} vs float64 oracle", flush=True)


def floors(P: dict) -> None:
    kc, vc, red, nbytes = P["kc"], P["vc"], P["red"], P["nbytes"]
    src = torch.empty(nbytes // 4, dtype=torch.int16, device=DEV)
    dst = torch.empty_like(src)
    report("copy: torch copy_, half the bytes read, half written", timed(lambda: dst.copy_(src)), nbytes)
    k2, v2 = kc.view(-1, D), vc.view(-1, D)
    for block_n, warps, stages, pps in ((128, 4, 3, 2), (64, 4, 4, 2), (64, 4, 6, 2), (64, 2, 4, 4),
                                        (128, 4, 4, 3), (32, 4, 8, 2)):
        splits, chunk = A._decode_splits(T, H_KV, kc.device, block_n, None, pps)
        grid = (H_KV, splits)
        fn = lambda: _read_split_kernel[grid](kc, vc, red, T, chunk, D=D, BLOCK_N=block_n, STAGES=stages,  # noqa: E731
                                              num_warps=warps)
        report(f"read, split form: BLOCK_N {block_n}, {warps} warps, {stages} stages, {splits} splits", timed(fn),
               nbytes)
        kd = TensorDescriptor.from_tensor(k2, [block_n, D])
        vd = TensorDescriptor.from_tensor(v2, [block_n, D])
        fn = lambda: _read_split_tma_kernel[grid](kd, vd, red, T, chunk, D=D, BLOCK_N=block_n,  # noqa: E731
                                                  STAGES=stages, num_warps=warps)
        report(f"read, split form, TMA: BLOCK_N {block_n}, {warps} warps, {stages} stages", timed(fn), nbytes)


def splits_and_combines(P: dict) -> None:
    """The split kernel alone and with each combine, per split config."""
    q, kc, vc, out, nbytes = P["q"], P["kc"], P["vc"], P["out"], P["nbytes"]
    scale = A._scale(None, D)
    plan = A._decode_plan(kc.device, kc.dtype, "tf32", 64, T)
    configs = [(plan.config, plan.programs_per_sm)]
    if not DRY:
        configs += [((64, 4, 4), 2), ((64, 4, 6), 2), ((64, 2, 4), 4), ((64, 2, 6), 4), ((128, 2, 3), 4),
                    ((128, 4, 4), 3), ((32, 4, 8), 2), ((64, 1, 4), 8)]
    for (block_n, warps, stages), pps in configs:
        splits, chunk = A._decode_splits(T, H_KV, kc.device, block_n, None, pps)
        parts = torch.empty(H * splits * (D + 2), device=DEV)
        tag = f"cfg ({block_n}, {warps}, {stages}), {splits} splits of {chunk} keys"

        def split_only(pdl=False):
            library_split(P, (block_n, warps, stages), splits, chunk, parts, pdl)

        report(f"split alone: {tag}", timed(split_only), nbytes)
        pdl = not DRY
        for cw in (1, 2, 4):
            out.fill_(float("nan"))
            fn = lambda: (split_only(pdl), library_combine(P, parts, splits, pdl, cw))  # noqa: E731
            report(f"  + combine, {cw} warps (PDL)", timed(fn), nbytes)
            check("combine", out, P["ref"])
        if DRY:
            continue
        # TMA split prototype (batch 1, no lengths or window) with the combine
        kd = TensorDescriptor.from_tensor(kc.view(-1, D), [block_n, D])
        vd = TensorDescriptor.from_tensor(vc.view(-1, D), [block_n, D])

        def tma_split(pdl=False):
            _split_tma_kernel[(H_KV, splits)](q, kd, vd, parts, H, H // H_KV, T, D, chunk, splits, scale,
                                              BLOCK_G=16, BLOCK_N=block_n, BLOCK_D=64, PDL=pdl, num_warps=warps,
                                              num_stages=stages)
        try:
            report(f"TMA split alone: {tag}", timed(tma_split), nbytes)
            out.fill_(float("nan"))
            report("  + combine (PDL)", timed(lambda: (tma_split(True), library_combine(P, parts, splits, True))),
                   nbytes)
            check("TMA split + combine", out, P["ref"])
        except Exception as exc:  # noqa: BLE001 - a prototype: report and go on
            print(f"    TMA split failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}", flush=True)


def dynamic(P: dict) -> None:
    """Chunks claimed at run time (deterministic partial per chunk) and plain over-decomposition, with a combine."""
    q, kc, vc, out, nbytes, sms = P["q"], P["kc"], P["vc"], P["out"], P["nbytes"], P["sms"]
    scale = A._scale(None, D)
    cursors = torch.zeros(H_KV, dtype=torch.int32, device=DEV)
    cases = [((128, 4, 3), 256, 2), ((128, 4, 3), 512, 2), ((128, 4, 3), 256, 3), ((64, 4, 4), 256, 2),
             ((128, 4, 2), 256, 3), ((128, 8, 3), 256, 2)]
    if DRY:
        cases = [((16, 4, 1), 64, 1)]
    for (block_n, warps, stages), chunk, pps in cases:
        n_chunks = -(-T // chunk)
        progs = max(1, pps * sms // H_KV)
        parts = torch.empty(H * n_chunks * (D + 2), device=DEV)

        def split():  # the cursors start at zero (a memset: the prototype has no combine that resets them)
            cursors.zero_()
            _split_dyn_kernel[(H_KV, progs)](q, kc, vc, parts, cursors, H, H // H_KV, T, D, n_chunks, chunk, scale,
                                             BLOCK_G=16, BLOCK_N=block_n, BLOCK_D=64, PDL=not DRY, num_warps=warps,
                                             num_stages=stages)
        tag = f"cfg ({block_n}, {warps}, {stages}), chunks of {chunk} keys ({n_chunks}), {progs} programs a KV head"
        report(f"dynamic split alone (+ memset): {tag}", timed(split), nbytes)
        out.fill_(float("nan"))
        fn = lambda: (split(), library_combine(P, parts, n_chunks, not DRY, 4))  # noqa: E731
        report("  + combine (PDL) (+ memset)", timed(fn), nbytes)
        check("dynamic", out, P["ref"])
    # over-decomposition: more programs than fit, the block scheduler balances
    for (block_n, warps, stages), splits in (((128, 4, 3), 64), ((128, 4, 3), 128), ((128, 4, 2), 128),
                                             ((64, 4, 3), 256)):
        if DRY:
            break
        splits, chunk = A._decode_splits(T, H_KV, kc.device, block_n, splits)
        parts = torch.empty(H * splits * (D + 2), device=DEV)

        def split_only(pdl=False):
            library_split(P, (block_n, warps, stages), splits, chunk, parts, pdl)

        tag = f"cfg ({block_n}, {warps}, {stages}), {splits} splits of {chunk} keys"
        report(f"over-decomposed split alone: {tag}", timed(split_only), nbytes)
        out.fill_(float("nan"))
        report("  + combine (PDL)", timed(lambda: (split_only(True), library_combine(P, parts, splits, True, 4))),
               nbytes)
        check("over-decomposed", out, P["ref"])


def configs(P: dict) -> None:
    """The static split kernel at more configs with the combine; the per-head signalled combine."""
    q, kc, vc, sinks, out, nbytes = P["q"], P["kc"], P["vc"], P["sinks"], P["out"], P["nbytes"]
    scale = A._scale(None, D)
    cfgs = [((16, 4, 1), 2)] if DRY else [((128, 4, 3), 2), ((128, 4, 2), 2), ((64, 4, 2), 2), ((64, 4, 3), 2),
                                          ((64, 8, 3), 2), ((128, 4, 3), 1), ((64, 4, 3), 3), ((128, 4, 2), 3)]
    counts = torch.zeros(H_KV, dtype=torch.int32, device=DEV)
    done = torch.zeros(H_KV, dtype=torch.int32, device=DEV)
    for (block_n, warps, stages), pps in cfgs:
        splits, chunk = A._decode_splits(T, H_KV, kc.device, block_n, None, pps)
        parts = torch.empty(H * splits * (D + 2), device=DEV)
        tag = f"cfg ({block_n}, {warps}, {stages}), {splits} splits of {chunk} keys"

        def split_only(pdl=False):
            library_split(P, (block_n, warps, stages), splits, chunk, parts, pdl)

        pdl = not DRY
        out.fill_(float("nan"))
        fn = lambda: (split_only(pdl), library_combine(P, parts, splits, pdl))  # noqa: E731
        report(f"split + combine (PDL): {tag}", timed(fn), nbytes)
        check("split + combine", out, P["ref"])

        def signalled():
            _split_signal_kernel[(H_KV, splits)](q, kc, vc, parts, counts, H, H // H_KV, T, D, chunk, splits, scale,
                                                 BLOCK_G=16, BLOCK_N=block_n, BLOCK_D=64, PDL=pdl, num_warps=warps,
                                                 num_stages=stages)
            _combine_spin_kernel[(H,)](parts, sinks, out, counts, done, *out.stride()[:2], H, H // H_KV, D, splits,
                                       BLOCK_S=A._next_pow2(splits), BLOCK_D=64, num_warps=1 if splits <= 32 else 4,
                                       launch_pdl=pdl)
        out.fill_(float("nan"))
        report("  signalled split + spinning combine (PDL)", timed(signalled), nbytes)
        check("signalled", out, P["ref"])
        if not DRY:
            torch.cuda.synchronize()
        if counts.any() or done.any():
            print("    WRONG: counters not zero after the call", flush=True)


def timeline(P: dict) -> None:
    """Per-program global-timer stamps of the split loop (and of a read-only loop) under the bench procedure."""
    q, kc, vc, nbytes = P["q"], P["kc"], P["vc"], P["nbytes"]
    scale = A._scale(None, D)
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=DEV)
    sms = P["sms"]
    cases = [((128, 4, 3), 2, False, None, 0), ((128, 4, 3), 2, False, None, 2), ((128, 4, 3), 2, False, None, 4),
             ((128, 4, 3), 2, False, None, 6), ((128, 4, 3), 2, False, "interleave", 0),
             ((128, 4, 3), 2, False, "interleave", 2), ((128, 4, 3), 2, False, "interleave", 4),
             ((128, 4, 3), 2, False, None, 0), ((64, 4, 4), 2, False, None, 4), ((64, 4, 4), 2, False, None, 8),
             ((128, 4, 2), 2, False, None, 3), ((128, 4, 2), 2, False, None, 5)]
    if DRY:
        cases = [((16, 4, 1), 2, False, None, 0), ((16, 4, 1), 2, False, "interleave", 0)]
    for (block_n, warps, stages), pps, read_only, weights, prefetch in cases:
        splits, chunk = A._decode_splits(T, H_KV, kc.device, block_n, None, pps)
        inter = weights == "interleave"
        wa, wb = (0, 0) if weights is None or inter else weights
        parts = torch.empty(H * splits * (D + 2), device=DEV)
        stamps = torch.zeros(H_KV * splits * 4, dtype=torch.int64, device=DEV)

        def run():
            _split_timeline_kernel[(H_KV, splits)](q, kc, vc, parts, stamps, H, H // H_KV, T, D, chunk, splits,
                                                   scale, BLOCK_G=16, BLOCK_N=block_n, BLOCK_D=64,
                                                   READ_ONLY=read_only, SLOTS=sms if wa else 0, A_BLOCKS=wa,
                                                   B_BLOCKS=wb, INTERLEAVE=inter, PREFETCH=prefetch, num_warps=warps,
                                                   num_stages=stages)
        tag = (f"{'read-only' if read_only else 'split'} loop ({block_n}, {warps}, {stages}), {splits} splits"
               + (f", first-launched {wa} blocks, second {wb}" if wa else "") + (", interleaved" if inter else "")
               + (f", L2 prefetch {prefetch} ahead" if prefetch else ""))
        report(tag, timed(run), nbytes)
        if not read_only:
            m = parts[H * splits * D: H * splits * (D + 1)].view(H, splits)
            lsum = parts[H * splits * (D + 1):].view(H, splits)
            acc = parts[: H * splits * D].view(H, splits, D)
            mm = m.max(1, keepdim=True).values
            w = torch.exp2(m - mm)
            res = (acc * w[..., None]).sum(1) / (lsum * w).sum(1)[:, None]  # no sinks here
            ref = A.sdpa_decode_sink_oracle(q.double(), kc.double(), vc.double(),
                                            torch.full((H,), float("-inf"), dtype=torch.float64, device=DEV))
            err = (res.double() - ref[0]).abs().max().item()
            if not err < 1e-3:
                print(f"    WRONG: max abs err {err:.2e}", flush=True)
        if DRY:
            continue
        rows = []
        for _ in range(5):
            flush.zero_()
            torch.cuda.synchronize()
            run()
            torch.cuda.synchronize()
            rows.append(stamps.view(-1, 4).cpu())
        for r in rows[-2:]:
            t0 = r[:, 0].min()
            st, lo, en = (r[:, 0] - t0) / 1e3, (r[:, 1] - t0) / 1e3, (r[:, 2] - t0) / 1e3
            dur = en - st
            q_ = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0])
            fmt = lambda t: " ".join(f"{v:5.2f}" for v in torch.quantile(t.double(), q_.double()).tolist())  # noqa
            print(f"    µs from the first start (min p10 p50 p90 max): start {fmt(st)} | loop end {fmt(lo)} | "
                  f"end {fmt(en)} | duration {fmt(dur)}", flush=True)
            lin = torch.arange(r.shape[0]) % splits * H_KV + torch.arange(r.shape[0]) // splits
            first = lin < sms
            print(f"    launched first (one per SM): mean duration {dur[first].mean():.2f} µs, end "
                  f"{en[first].mean():.2f}; launched after: {dur[~first].mean():.2f}, end {en[~first].mean():.2f}",
                  flush=True)
            sm = r[:, 3]
            per_sm = torch.bincount(sm, minlength=132)
            lone = per_sm[sm] == 1
            if lone.any():
                print(f"    programs alone on their SM: {int(lone.sum())}, their mean duration {dur[lone].mean():.2f} "
                      f"vs {dur[~lone].mean():.2f} µs for the others", flush=True)
            last = torch.argsort(en, descending=True)[:8]
            print("    last 8 to end (tile, split, sm, start, end): " + ", ".join(
                f"({int(i) // splits},{int(i) % splits},{int(sm[i])},{st[i]:.1f},{en[i]:.1f})" for i in last),
                flush=True)


def launcher(P: dict) -> None:
    q, kc, vc, sinks, out, nbytes = P["q"], P["kc"], P["vc"], P["sinks"], P["out"], P["nbytes"]
    for pdl, q_in_loop in ((True, None), (False, None), (True, True), (True, False), (True, None)):
        A.DECODE_PDL, A.DECODE_Q_IN_LOOP = pdl, q_in_loop
        report(f"sdpa_decode_sink (launcher), PDL {pdl}, q in the loop {q_in_loop} (None: the plan's)",
               timed(lambda: A.sdpa_decode_sink(q, kc, vc, sinks, precision="tf32", out=out)), nbytes)
        check("launcher", out, P["ref"])
    A.DECODE_PDL, A.DECODE_Q_IN_LOOP = True, None


def combine_warps(P: dict) -> None:
    """sdpa_decode_sink as launched at 32k keys, head dims 64 and 128, fp16/bf16, by the combine's warp count."""
    for d in (64, 128):
        for dtype in (torch.float16,) if DRY else (torch.float16, torch.bfloat16):  # bf16: GPU only (interpreter)
            gen = torch.Generator(DEV).manual_seed(1)
            q = torch.randn((1, H, d), generator=gen, device=DEV).to(dtype)
            kc = torch.randn((1, H_KV, T, d), generator=gen, device=DEV).to(dtype)
            vc = torch.randn((1, H_KV, T, d), generator=gen, device=DEV).to(dtype)
            sinks = torch.randn((H,), generator=gen, device=DEV)
            ref = A.sdpa_decode_sink_oracle(q.double(), kc.double(), vc.double(), sinks.double())
            out = torch.empty_like(q)
            keep = A.COMBINE_WARPS
            for w in (1, 2, 4):
                A.COMBINE_WARPS = w
                out.fill_(float("nan"))
                report(f"h{d} {str(dtype)[6:]}: combine with {w} warps",
                       timed(lambda: A.sdpa_decode_sink(q, kc, vc, sinks, precision="tf32", out=out)), kc.numel() * 4)
                check(f"h{d} {w} warps", out, ref)
            A.COMBINE_WARPS = keep


def fp32_long(P: dict) -> None:
    """float32 caches at 32k keys (separate combine): split configs per dot form and head dim."""
    sms = P["sms"]
    cands = {("tf32x3", 64): [(64, 8, 2), (64, 4, 2), (64, 4, 3), (32, 4, 3), (32, 4, 4), (128, 8, 2), (32, 8, 3)],
             ("ieee", 64): [(32, 8, 2), (32, 4, 2), (16, 4, 3), (64, 8, 2), (32, 4, 3), (16, 4, 4)],
             ("tf32x3", 128): [(32, 8, 2), (32, 4, 2), (64, 8, 2), (16, 4, 3), (32, 4, 3)],
             ("ieee", 128): [(32, 8, 2), (16, 4, 2), (32, 4, 2), (16, 8, 3)]}
    if DRY:
        cands = {("tf32x3", 64): [(16, 4, 1)]}
    for (prec, d), cfgs in cands.items():
        gen = torch.Generator(DEV).manual_seed(2)
        q = torch.randn((1, H, d), generator=gen, device=DEV)
        kc = torch.randn((1, H_KV, T, d), generator=gen, device=DEV)
        vc = torch.randn((1, H_KV, T, d), generator=gen, device=DEV)
        sinks = torch.randn((H,), generator=gen, device=DEV)
        ref = A.sdpa_decode_sink_oracle(q.double(), kc.double(), vc.double(), sinks.double())
        out = torch.empty_like(q)
        for cfg in cfgs:
            for pps in (2, 1, 3):
                splits = -(-pps * sms // H_KV)
                out.fill_(float("nan"))
                fn = lambda: A._launch_decode(q, kc, vc, sinks, None, None, None, prec, splits, out,  # noqa: E731
                                              config=cfg, fused_combine=False)
                try:
                    us = timed(fn)
                except Exception as exc:  # noqa: BLE001 - a config that does not compile is reported
                    print(f"  {prec} h{d} {cfg} pps {pps}: failed {type(exc).__name__}", flush=True)
                    continue
                report(f"{prec} h{d} fp32 cfg {cfg}, {pps} programs per SM", us, kc.numel() * 8)
                err = (out.double() - ref).abs().max().item()
                if not err < 1e-4:
                    print(f"    WRONG: max abs err {err:.2e}", flush=True)


def flat(P: dict, static_only: bool = False, qload: bool = False, work: bool = False) -> None:
    """Run-time balancing in one flat pipelined loop (_split_flat_kernel): static blocks, then claimed ones.
    static_only (section `tiles`): no claims, one program per SM with larger tiles against two per SM.
    qload (section `qload`): no claims, q loaded before the loop, in it at every step, at the first step only.
    work (section `work`): no claims, less arithmetic a step (timing only: the output is wrong on purpose)."""
    q, kc, vc, sinks, out, nbytes, sms = P["q"], P["kc"], P["vc"], P["sinks"], P["out"], P["nbytes"], P["sms"]
    scale = A._scale(None, D)
    cursors = torch.zeros(H_KV, dtype=torch.int32, device=DEV)
    pdl = not DRY
    # (block_n, warps, stages), programs a KV head (0: two per SM), static blocks a program, iterations past
    # the fair share, deterministic
    c128, c64, c64s4 = (128, 4, 3), (64, 4, 3), (64, 4, 4)
    cases = [(c128, 32, 8, 0, False), (c128, 32, 6, 1, False), (c128, 32, 6, 2, False), (c128, 32, 4, 2, False),
             (c128, 32, 2, 2, False), (c128, 32, 0, 2, False), (c128, 32, 6, 1, True), (c128, 32, 6, 2, True),
             (c128, 32, 4, 2, True), (c128, 33, 7, 1, False), (c128, 33, 7, 1, True), (c64, 32, 16, 0, False),
             (c64, 32, 12, 2, False), (c64, 32, 14, 2, False), (c64, 32, 12, 2, True), (c64, 32, 14, 2, True),
             (c64, 49, 8, 2, False), (c64s4, 33, 13, 3, False), (c64s4, 33, 13, 3, True), (c64, 66, 6, 2, False)]
    if static_only:
        cases = [(c128, 32, 8, 0, False), ((256, 8, 3), 16, 8, 0, False), ((128, 8, 4), 16, 16, 0, False),
                 ((128, 8, 3), 16, 16, 0, False), ((256, 8, 2), 16, 8, 0, False), ((64, 4, 6), 32, 16, 0, False),
                 (c128, 32, 8, 0, False)]
    if qload:
        cases = [(c128, 32, 8, 0, False, qm) for qm in (0, 1, 2, 0, 1, 2)] + [((64, 4, 3), 32, 16, 0, False, qm)
                                                                            for qm in (0, 1, 2)]
    if work:
        cases = [(c128, 32, 8, 0, False, 0, w) for w in (0, 1, 2, 3, 4, 5)]
        cases += [(cfg, 32, 8, 0, False, 0, w) for cfg in ((128, 2, 3), (128, 1, 3), (128, 8, 3)) for w in (0, 4)]
        cases += [(c128, 32, 8, 0, False, 1, 4), (c128, 32, 8, 0, False, 0, 0), (c128, 32, 8, 0, False, 0, 4)]
        cases += [((256, 4, 2), 32, 4, 0, False, 0, 5), ((256, 4, 3), 32, 4, 0, False, 0, 5),
                  ((128, 4, 4), 32, 8, 0, False, 0, 5), ((128, 2, 3), 32, 8, 0, False, 0, 5),
                  (c128, 32, 8, 0, False, 0, 5), (c128, 32, 8, 0, False, 0, 0)]
    if DRY:
        cases = [((16, 4, 1), 0, 1, 2, False), ((16, 4, 1), 0, 1, 2, True), ((16, 4, 1), 0, 0, 3, False),
                 ((16, 4, 1), 0, 0, 3, True)]
        if qload:
            cases = [((16, 4, 1), 0, 2, 0, False, qm) for qm in (0, 1, 2)]
        if work:
            cases = [((32, 4, 1), 0, 1, 0, False, 0, w) for w in (0, 1, 2, 3, 4, 5)] + [((32, 4, 1), 4, 4, 0, False, 0, 5),
                                                                                   ((32, 4, 1), 4, 4, 0, False, 0, 4)]
    flush = None if DRY else torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=DEV)
    for case in cases:
        (block_n, warps, stages), progs, static, extra, det = case[:5]
        qmode = case[5] if len(case) > 5 else 0
        work_ = case[6] if len(case) > 6 else 0
        progs = progs or 2 * sms // H_KV
        n_blocks = T // block_n
        fair = -(-n_blocks // progs)
        static = min(static, n_blocks // progs)
        n_iter = fair + extra
        n_slots = (progs if static or not det else 0) + (n_blocks - static * progs if det else 0)
        parts = torch.empty(H * n_slots * (D + 2), device=DEV)
        stamps = torch.zeros(H_KV * progs * 5, dtype=torch.int64, device=DEV)
        bs = min(A._next_pow2(n_slots), 64)

        def run(stamp=False):
            _split_flat_kernel[(H_KV, progs)](q, kc, vc, parts, cursors, stamps, H, H // H_KV, T, D, n_blocks, n_iter,
                                              progs, n_slots, scale, BLOCK_G=16, BLOCK_N=block_n, BLOCK_D=64,
                                              STATIC=static, DET=det, PDL=pdl, STAMP=stamp and not DRY,
                                              QMODE=qmode, WORK=work_, num_warps=warps, num_stages=stages)
            _combine_reset_kernel[(H,)](parts, sinks, out, cursors, *out.stride()[:2], H, H // H_KV, D, n_slots,
                                        BLOCK_S=bs, BLOCK_D=64, PDL=pdl, num_warps=1 if bs <= 32 else 2,
                                        launch_pdl=pdl)
        tag = (f"({block_n}, {warps}, {stages}) {progs} programs/head, {static} static of {fair}, {n_iter} iterations"
               f"{', deterministic' if det else ''} ({n_slots} slots)"
               + ("" if qmode == 0 else ", q in the loop" if qmode == 1 else ", q at the first step")
               + ("", ", timing only: no softmax", ", timing only: two independent dots",
                  ", timing only: K, V summed", ", unmasked softmax step", ", paired halves")[work_])
        out.fill_(float("nan"))
        report(tag, timed(run), nbytes)
        if work_ in (0, 4, 5):
            check(tag, out, P["ref"])
        if DRY:
            continue
        torch.cuda.synchronize()
        if cursors.any():
            print("    WRONG: cursors not zero after the call", flush=True)
        for _ in range(3):
            flush.zero_()
            torch.cuda.synchronize()
            run(True)
            torch.cuda.synchronize()
        r = stamps.view(-1, 5).cpu()
        t0 = r[:, 0].min()
        lo = (r[:, 1] - t0) / 1e3
        first = (r[:, 4] - t0) / 1e3
        qs = torch.quantile(lo.double(), torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=torch.float64))
        nb = r[:, 2]
        print(f"    loop end µs (min p10 p50 p90 max): {' '.join(f'{v:5.2f}' for v in qs.tolist())}; blocks a "
              f"program: min {int(nb.min())} max {int(nb.max())}, total {int(nb.sum())} of {n_blocks * H_KV}",
              flush=True)
        qf = torch.quantile(first.double(), torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64))
        print(f"    first step done µs (min p50 max): {' '.join(f'{v:5.2f}' for v in qf.tolist())}", flush=True)
        if static_only:
            _who_is_slow(lo, r[:, 3], progs)


def _who_is_slow(end: torch.Tensor, sm: torch.Tensor, progs: int) -> None:
    """Loop ends against the program's KV head, its split (address) and its SM partner."""
    by_head = end.view(H_KV, progs).mean(1)
    by_split = end.view(H_KV, progs).mean(0)
    print(f"    mean end by KV head: {' '.join(f'{v:.2f}' for v in by_head.tolist())}; by split: min "
          f"{by_split.min():.2f} max {by_split.max():.2f} (split 0 {by_split[0]:.2f}, last {by_split[-1]:.2f})",
          flush=True)
    pairs = [torch.nonzero(sm == i).flatten() for i in torch.unique(sm)]
    two = [pr for pr in pairs if len(pr) == 2]
    if two:
        a = torch.stack([end[pr[0]] for pr in two]).double()
        b = torch.stack([end[pr[1]] for pr in two]).double()
        corr = torch.corrcoef(torch.stack([a, b]))[0, 1].item()
        print(f"    SMs with two programs: {len(two)}; correlation of the two's ends {corr:+.2f}; mean |difference| "
              f"{(a - b).abs().mean():.2f} µs; spread of SM means (sd) {((a + b) / 2).std():.2f} µs", flush=True)


def sweep(P: dict) -> None:
    """Read-only kernels by the order in which programs take the cache's blocks (_read_sweep_kernel)."""
    kc, vc, nbytes = P["kc"], P["vc"], P["nbytes"]
    src = torch.empty(nbytes // 4, dtype=torch.int16, device=DEV)
    dst = torch.empty_like(src)
    report("copy: torch copy_, half the bytes read, half written", timed(lambda: dst.copy_(src)), nbytes)
    report("torch: kc.sum() + vc.sum() (fp32 accumulate)", timed(lambda: (kc.sum(dtype=torch.float32),
                                                                         vc.sum(dtype=torch.float32))), nbytes)
    cases = [(128, 4, 3, 256), (64, 4, 4, 256), (128, 4, 3, 512), (64, 4, 3, 1024), (32, 4, 4, 1024),
             (256, 8, 3, 128)]
    if DRY:
        cases = [(16, 4, 1, 16)]
    red = torch.empty(nbytes // 2 // 1024, device=DEV)
    both = torch.cat([kc.view(-1), vc.view(-1)])  # one buffer (the copy's source is one buffer too)
    for block, warps in ((2048, 4), (4096, 4), (8192, 4), (8192, 8), (16384, 8), (4096, 2)):
        if DRY:
            block = 1024
        fn = lambda: _read_small_kernel[(both.numel() // block,)](both, red, BLOCK=block, num_warps=warps)  # noqa
        report(f"read, {both.numel() // block} programs of {block * 2 // 1024} KB, {warps} warps, no loop", timed(fn),
               nbytes)
        if DRY:
            want = both.float().view(-1, block).sum(1)
            if not torch.allclose(red[:want.numel()], want, rtol=1e-3, atol=1e-2):
                print("    WRONG: small-program read sums", flush=True)
            break
    for block_n, warps, stages, progs in cases:
        n_blocks = H_KV * T // block_n
        for mode, name in ((0, "contiguous runs"), (1, "a front per head"), (2, "grid-stride (one front)")):
            fn = lambda: _read_sweep_kernel[(progs,)](kc, vc, red, n_blocks, T // block_n, D=D,  # noqa: E731
                                                      BLOCK_N=block_n, MODE=mode, STAGES=stages, num_warps=warps)
            report(f"read ({block_n}, {warps}, {stages}), {progs} programs, {name}", timed(fn), nbytes)
        if DRY:
            got = red[:progs].sum().item()
            want = kc.float().sum().item() + vc.float().sum().item()
            if abs(got - want) > 1e-2 * (1 + abs(want)):
                print(f"    WRONG: sweep sum {got} vs {want}", flush=True)


def sm_stable(P: dict) -> None:
    """Is a slow SM slow in every run? The static split loop (_split_flat_kernel, no claims) stamped over runs:
    per-SM and per-program mean loop ends, each run centred, correlated between runs."""
    q, kc, vc, sms = P["q"], P["kc"], P["vc"], P["sms"]
    scale = A._scale(None, D)
    block_n, progs = (16, 16) if DRY else (128, 32)
    n_blocks = T // block_n
    per = n_blocks // progs
    parts = torch.empty(H * progs * (D + 2), device=DEV)
    stamps = torch.zeros(H_KV * progs * 5, dtype=torch.int64, device=DEV)
    cursors = torch.zeros(H_KV, dtype=torch.int32, device=DEV)
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=DEV)
    by_sm, by_prog = [], []
    for _ in range(3 if DRY else 16):
        flush.zero_()
        if not DRY:
            torch.cuda.synchronize()
        _split_flat_kernel[(H_KV, progs)](q, kc, vc, parts, cursors, stamps, H, H // H_KV, T, D, n_blocks, per,
                                          progs, progs, scale, BLOCK_G=16, BLOCK_N=block_n, BLOCK_D=64, STATIC=per,
                                          DET=False, PDL=False, STAMP=not DRY, num_warps=4, num_stages=3)
        if DRY:
            continue
        torch.cuda.synchronize()
        r = stamps.view(-1, 5).cpu()
        end = ((r[:, 1] - r[:, 0].min()) / 1e3).double()
        end = end - end.mean()
        sm = r[:, 3]
        tot = torch.zeros(sms, dtype=torch.float64).index_add_(0, sm, end)
        cnt = torch.bincount(sm, minlength=sms).double()
        by_sm.append(torch.where(cnt > 0, tot / cnt.clamp(min=1), float("nan")))
        by_prog.append(end)
    if DRY:
        return

    def cross(rows: list) -> str:
        x = torch.stack(rows)
        ok = ~torch.isnan(x).any(0)
        c = torch.corrcoef(x[:, ok])
        off = c[~torch.eye(len(rows), dtype=torch.bool)]
        return f"mean {off.mean():+.2f} (min {off.min():+.2f}, max {off.max():+.2f}) over {int(ok.sum())} items"

    print(f"  correlation between runs of the per-SM mean loop end: {cross(by_sm)}", flush=True)
    print(f"  correlation between runs of the per-program loop end: {cross(by_prog)}", flush=True)
    m = torch.stack(by_sm).nanmean(0)
    order = torch.argsort(m)
    print(f"  per-SM mean over runs (µs from the run mean), fastest 6: "
          f"{', '.join(f'sm{int(i)} {m[i]:+.2f}' for i in order[:6])}; slowest 6: "
          f"{', '.join(f'sm{int(i)} {m[i]:+.2f}' for i in order[-6:])}; sd of the means {m.std():.2f}", flush=True)
    print("  per-SM mean by smid, in order: " + " ".join(f"{v:+.1f}" for v in m.tolist()), flush=True)


def one(P: dict) -> None:
    """Many one-block programs (_split_one_kernel) + a one-step wide combine (_combine_wide_kernel)."""
    q, kc, vc, sinks, out, nbytes = P["q"], P["kc"], P["vc"], P["sinks"], P["out"], P["nbytes"]
    scale = A._scale(None, D)
    pdl = not DRY
    # (BLOCK_N, warps, blocks a program, heads inner, eviction), (combine slice, warps)
    cases = [((128, 4, 1, True, ""), (16, 4)), ((128, 8, 1, True, ""), (16, 4)), ((128, 4, 1, False, ""), (16, 4)),
             ((128, 4, 1, True, "evict_first"), (16, 4)), ((64, 4, 2, True, ""), (16, 4)),
             ((128, 4, 2, True, ""), (16, 4)), ((128, 8, 2, True, ""), (32, 4)), ((64, 4, 1, True, ""), (8, 4)),
             ((128, 4, 1, True, ""), (32, 4)), ((128, 4, 1, True, ""), (8, 2))]
    if DRY:
        cases = [((16, 4, 2, True, ""), (16, 4)), ((16, 4, 1, False, ""), (8, 2))]
    for (block_n, warps, nb, inner, evict), (slice_, cw) in cases:
        n_slots = T // (block_n * nb)
        parts = torch.empty(H * n_slots * (D + 2), device=DEV)
        bs = A._next_pow2(n_slots)

        def split():
            _split_one_kernel[(H_KV * n_slots,)](q, kc, vc, parts, H, H // H_KV, T, D, n_slots, scale, BLOCK_G=16,
                                                 BLOCK_N=block_n, BLOCK_D=64, NB=nb, HEADS_INNER=inner, EVICT=evict,
                                                 PDL=pdl, num_warps=warps)

        def run():
            split()
            _combine_wide_kernel[(H, D // slice_)](parts, sinks, out, out.stride(1), H, D, n_slots, BLOCK_S=bs,
                                                   SLICE=slice_, PDL=pdl, num_warps=cw, launch_pdl=pdl)
        tag = (f"one-block programs: ({block_n}, {warps}) x{nb}, {H_KV * n_slots} programs"
               f"{', heads inner' if inner else ''}{', ' + evict if evict else ''}")
        report(f"{tag}, split alone", timed(split), nbytes)
        out.fill_(float("nan"))
        report(f"  + wide combine (slice {slice_}, {cw} warps)", timed(run), nbytes)
        check(tag, out, P["ref"])


def handoff(P: dict) -> None:
    """What the combine costs: the split kernel alone, + the combine, + a combine that reads nothing; the
    library's fused form (last split program of a head merges) by merge shape."""
    q, kc, vc, sinks, out, nbytes = P["q"], P["kc"], P["vc"], P["sinks"], P["out"], P["nbytes"]
    cfg = (16, 4, 1) if DRY else (128, 4, 3)
    splits, chunk = A._decode_splits(T, H_KV, kc.device, cfg[0], None, 2)
    parts = torch.empty(H * splits * (D + 2), device=DEV)
    pdl = not DRY
    for _ in range(2):
        report(f"split alone {cfg}, {splits} splits", timed(lambda: library_split(P, cfg, splits, chunk, parts, False)),
               nbytes)
        report("split + combine (PDL)", timed(lambda: (library_split(P, cfg, splits, chunk, parts, pdl),
                                                        library_combine(P, parts, splits, pdl))), nbytes)
        report("split + a combine that reads nothing (PDL)", timed(lambda: (
            library_split(P, cfg, splits, chunk, parts, pdl),
            _combine_empty_kernel[(H,)](sinks, out, out.stride(1), D, BLOCK_D=64, PDL=pdl, num_warps=1,
                                        launch_pdl=pdl))), nbytes)
        report("split + a combine that reads nothing (no PDL)", timed(lambda: (
            library_split(P, cfg, splits, chunk, parts, False),
            _combine_empty_kernel[(H,)](sinks, out, out.stride(1), D, BLOCK_D=64, PDL=False, num_warps=1))), nbytes)
    merges = [(16, 2048, 1), (8, 16384, 1), (8, 8192, 1), (8, 4096, 1), (8, 8192, 2), (8, 4096, 3), (8, 2048, 4)]
    if DRY:
        merges = merges[:2]
    for merge in merges:
        out.fill_(float("nan"))
        fn = lambda: A._launch_decode(q, kc, vc, sinks, None, None, None, "tf32", None, out,  # noqa: E731
                                      config=cfg, fused_combine=True, merge=merge)
        try:
            report(f"fused (last split program merges), merge {merge}", timed(fn), nbytes)
        except Exception as exc:  # noqa: BLE001 - a merge shape that does not compile is reported
            print(f"  fused merge {merge}: failed {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            continue
        check(f"fused {merge}", out, P["ref"])


def waves(P: dict) -> None:
    """Big programs, then small ones the block scheduler hands to the SMs that finish first (_split_waves_kernel)."""
    q, kc, vc, sinks, out, nbytes = P["q"], P["kc"], P["vc"], P["sinks"], P["out"], P["nbytes"]
    scale = A._scale(None, D)
    cursors = torch.zeros(H_KV, dtype=torch.int32, device=DEV)
    pdl = not DRY
    # (block_n, warps, stages), big programs a KV head, their blocks, small programs' blocks
    cases = [((128, 4, 3), 32, 8, 1), ((128, 4, 4), 32, 8, 1), ((128, 4, 4), 33, 7, 1), ((128, 4, 4), 33, 6, 1),
             ((128, 4, 4), 33, 6, 2), ((128, 4, 4), 33, 5, 1), ((128, 4, 3), 49, 5, 1), ((128, 4, 3), 49, 4, 2),
             ((128, 4, 3), 33, 7, 1), ((128, 4, 3), 33, 6, 1), ((128, 4, 5), 33, 7, 1), ((128, 4, 3), 32, 8, 1)]
    if DRY:
        cases = [((16, 4, 1), 8, 3, 1), ((16, 4, 1), 4, 5, 2)]
    for (block_n, warps, stages), n_big, big, small in cases:
        n_blocks = T // block_n
        n_small = -(-(n_blocks - n_big * big) // small)
        n_slots = n_big + n_small
        parts = torch.empty(H * n_slots * (D + 2), device=DEV)
        bs = min(A._next_pow2(n_slots), 64)

        def run():
            _split_waves_kernel[(H_KV, n_slots)](q, kc, vc, parts, H, H // H_KV, T, D, n_big, big, small, n_slots,
                                                 scale, BLOCK_G=16, BLOCK_N=block_n, BLOCK_D=64, PDL=pdl,
                                                 num_warps=warps, num_stages=stages)
            _combine_reset_kernel[(H,)](parts, sinks, out, cursors, *out.stride()[:2], H, H // H_KV, D, n_slots,
                                        BLOCK_S=bs, BLOCK_D=64, PDL=pdl, num_warps=1 if bs <= 32 else 2,
                                        launch_pdl=pdl)
        tag = f"({block_n}, {warps}, {stages}) {n_big} x {big} blocks + {n_small} x {small} a KV head"
        out.fill_(float("nan"))
        report(tag, timed(run), nbytes)
        check(tag, out, P["ref"])


def poll(P: dict) -> None:
    """The split kernel + a combine that polls the partials for a sentinel instead of waiting for the grid."""
    nbytes, out = P["nbytes"], P["out"]
    cfg = (16, 4, 1) if DRY else (128, 4, 3)
    splits, chunk = A._decode_splits(T, H_KV, P["kc"].device, cfg[0], None, 2)
    parts = torch.full((H * splits * (D + 2),), _SENTINEL.value, dtype=torch.int32, device=DEV).view(torch.float32)
    plain = torch.empty_like(parts)
    pdl = not DRY
    for sleep in ((0,) if DRY else (0, 100, 500, 0)):
        out.fill_(float("nan"))
        report("split + combine (PDL, waits for the grid)", timed(lambda: (
            library_split(P, cfg, splits, chunk, plain, pdl), library_combine(P, plain, splits, pdl))), nbytes)
        check("split + combine", out, P["ref"])
        out.fill_(float("nan"))

        def run():
            library_split(P, cfg, splits, chunk, parts, pdl)
            _combine_poll_kernel[(H,)](parts, P["sinks"], out, out.stride(1), H, D, splits, BLOCK_S=32, BLOCK_D=64,
                                       SLEEP=sleep, num_warps=1, launch_pdl=pdl)
        report(f"split + polling combine (nanosleep {sleep} ns between polls)", timed(run), nbytes)
        check("polling", out, P["ref"])
        if not DRY:
            torch.cuda.synchronize()
        if not bool((parts.view(torch.int32) == _SENTINEL.value).all()):
            print("    WRONG: partials not reset to the sentinel", flush=True)


SECTIONS = {"floors": floors, "splits": splits_and_combines, "timeline": timeline, "dynamic": dynamic,
            "configs": configs, "combine_warps": combine_warps, "fp32_long": fp32_long, "launcher": launcher,
            "flat": flat, "sweep": sweep,
            "tiles": lambda P: flat(P, True), "sm_stable": sm_stable,
            "one": one, "handoff": handoff,
            "qload": lambda P: flat(P, qload=True), "waves": waves, "poll": poll,
            "work": lambda P: flat(P, work=True)}


def main() -> None:
    what = sys.argv[1:] or ["floors", "splits", "launcher"]
    P = setup()
    print(f"# torch {torch.__version__}, triton {triton.__version__}, "
          f"{'CPU (dry run)' if DRY else torch.cuda.get_device_name()}; cache {P['nbytes'] / 1e6:.1f} MB", flush=True)
    for w in what:
        print(f"## {w}", flush=True)
        SECTIONS[w](P)


if __name__ == "__main__":
    main()
