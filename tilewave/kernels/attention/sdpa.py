"""Forward attention kernels (bidirectional with an optional key-padding mask or windows; relative-position
Conformer attention with GQA) and their launchers."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from tilewave.kernels.attention.common import (_cdiv, _check_qkv, _config, _dot_form, _dot_precision, _gqa_group,
                                               _head_block, _load_rows, _online_softmax_step,
                                               _online_softmax_step_unmasked, _out, _scale, _softmax_start,
                                               _store_normalized)
from tilewave.kernels.attention.plan import _KPM_SCAN, _REL_CPU, _REL_GPU, _REL_SPLIT_D_FORMS, _fwd_config


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
