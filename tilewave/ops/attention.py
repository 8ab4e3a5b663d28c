"""Attention ops. q, k, v [B, H, T, D]; the last dim of every tensor must be contiguous for the Triton path.

A query with no key to attend (all keys padded, an empty window, an empty cache without a sink) outputs 0
on both paths. Layouts and the exact formulas: tilewave/kernels/attention/.
float32 tensors meet the tensor cores as tilewave.precision.current() says: 'ieee' (outside a scope, exact
float32 on the FMA units), 'tf32x3' (float32-class error; what PyTorch's own float32 SDPA computes, and faster than it)
or 'tf32'.
"""
from __future__ import annotations

import torch

from tilewave import precision
from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.attention import (sdpa_bidirectional_torch, sdpa_bidirectional_windowed_torch,
                                         sdpa_decode_sink_torch, sdpa_rel_pos_conformer_torch)


def _covered(*tensors: torch.Tensor | None) -> tuple[bool, str]:
    """The Triton kernels need head dims <= 128, a contiguous last dim and one floating dtype."""
    present = [t for t in tensors if t is not None]
    D, max_d = present[0].shape[-1], kernels("attention").MAX_HEAD_DIM
    if D > max_d:
        return False, f"head dim {D} > {max_d}"
    if any(t.stride(-1) != 1 for t in present):
        return False, "last dim not contiguous"
    if len({t.dtype for t in present}) != 1 or present[0].dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return False, f"dtypes {sorted({str(t.dtype) for t in present})} not one of float32/float16/bfloat16"
    return True, ""


def sdpa_bidirectional(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       key_padding_mask: torch.Tensor | None = None, scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * scale) v with keys where key_padding_mask [B, T_k] is False excluded."""
    if use_triton("sdpa_bidirectional", q, k, v, key_padding_mask, supported=lambda: _covered(q, k, v)):
        return kernels("attention").sdpa_bidirectional(q, k, v, key_padding_mask, scale,
                                                       precision=precision.current())
    return sdpa_bidirectional_torch(q, k, v, key_padding_mask, scale)


def sdpa_bidirectional_windowed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seg_start: torch.Tensor,
                                seg_len: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """Query i attends keys [seg_start[i], seg_start[i] + seg_len[i]) only; seg_start, seg_len int32 [T]
    (`tilewave.reference.attention.segments_from_lengths` builds them from window lengths)."""
    if use_triton("sdpa_bidirectional_windowed", q, k, v, seg_start, seg_len, supported=lambda: _covered(q, k, v)):
        return kernels("attention").sdpa_bidirectional_windowed(q, k, v, seg_start.to(torch.int32).contiguous(),
                                                                seg_len.to(torch.int32).contiguous(), scale,
                                                                precision=precision.current())
    return sdpa_bidirectional_windowed_torch(q, k, v, seg_start, seg_len, scale)


def sdpa_rel_pos_conformer(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rel_emb: torch.Tensor,
                           pos_bias_u: torch.Tensor, pos_bias_v: torch.Tensor, rel_zero: int | None = None,
                           scale: float | None = None) -> torch.Tensor:
    """Transformer-XL relative-position attention: softmax(scale((q + u) k^T + (q + v) rel_emb[dist]^T)) v.

    q [B, H, Tq, D]; k, v [B, H_kv, Tk, D] (GQA); rel_emb [rel_len, H, D]; pos_bias_u/v [H, D];
    dist = clamp(j + rel_zero - i, 0, rel_len - 1), rel_zero defaulting to Tq - 1.
    """
    if use_triton("sdpa_rel_pos_conformer", q, k, v, rel_emb, pos_bias_u, pos_bias_v,
                  supported=lambda: _covered(q, k, v, rel_emb)):
        return kernels("attention").sdpa_rel_pos_conformer(q, k, v, rel_emb, pos_bias_u, pos_bias_v, rel_zero, scale,
                                                           precision=precision.current())
    return sdpa_rel_pos_conformer_torch(q, k, v, rel_emb, pos_bias_u, pos_bias_v, rel_zero, scale)


def sdpa_decode_sink(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, sinks: torch.Tensor,
                     cache_lens: torch.Tensor | None = None, window: int | None = None,
                     scale: float | None = None) -> torch.Tensor:
    """One decode step: q [B, H, D] (or [B, H, 1, D]) over the cache [B, H_kv, T, D] plus a per-head sink
    logit sinks [H] (a virtual key of value 0); keys [len - window, len) of the first cache_lens[b] keys."""
    if use_triton("sdpa_decode_sink", q, k_cache, v_cache, sinks, cache_lens,
                  supported=lambda: _covered(q, k_cache, v_cache)):
        lens = None if cache_lens is None else cache_lens.to(torch.int32)
        return kernels("attention").sdpa_decode_sink(q, k_cache, v_cache, sinks, lens, window, scale,
                                                     precision=precision.current())
    return sdpa_decode_sink_torch(q, k_cache, v_cache, sinks, cache_lens, window, scale)
