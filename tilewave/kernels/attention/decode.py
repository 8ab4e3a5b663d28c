"""Split-K decode attention with a sink: the split kernel, its fused merge or the separate combine, and the launcher."""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from tilewave.kernels._common import hopper_or_newer
from tilewave.kernels.attention.common import (_cdiv, _check_qkv, _dot_precision, _gqa_group, _head_block, _load_rows,
                                               _online_softmax_step, _out, _scale, _softmax_start)
from tilewave.kernels.attention.plan import (COMBINE_BLOCK_S, COMBINE_WARPS, DECODE_BLOCK_G, _decode_plan,
                                             _decode_splits, _merge_constexprs)


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


# Over 80 lines: the key loop and the fused merge share the tile's state; the compiled form is checked as it stands.
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
            # `!= 0`: the interpreter splats a scalar bool as int32 and Triton 3.9's refuses a non-bool mask; compiled,
            # the comparison folds away (the same PTX as without it)
            q = _load_rows(q_base, heads, sqh, d, (g_ok & (n < end)) != 0, d_ok)
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
                   config=None, fused_combine=None, merge=None, q_in_loop=None, pdl=True):
    """config: (BLOCK_N, num_warps, num_stages), fused_combine: True/False, merge: the fused merge's (rows,
    elements a step, stages), q_in_loop: True/False instead of the plan's picks (tests, tuning); pdl: the
    separate combine as a programmatic dependent launch where the GPU has them (sm_90+)."""
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
    q_in_loop = plan.q_in_loop if q_in_loop is None else bool(q_in_loop)
    fused = plan.fused if fused_combine is None else bool(fused_combine)
    BLOCK_N, warps, stages = config or plan.config
    tiles = B * H_kv * g_tiles
    splits, chunk = _decode_splits(window, tiles, q.device, BLOCK_N, num_splits, plan.programs_per_sm)
    if B * H == 0:
        return out
    pdl = pdl and not fused and hopper_or_newer(q.device)
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
