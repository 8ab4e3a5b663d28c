"""Attention in PyTorch: the peers of tilewave/kernels/attention and the CPU path of tilewave.ops.attention
(F.scaled_dot_product_attention with the equivalent explicit mask or bias, rows with no key to attend set to 0:
PyTorch leaves them NaN); and the float64 oracles (the scores written out, then one explicit softmax)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


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
