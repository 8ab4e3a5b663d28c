"""Attention ops. q, k, v [B, H, T, D]."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tilewave.ops.dispatch import use_triton


def sdpa_bidirectional(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       key_padding_mask: torch.Tensor | None = None, scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * scale) v with keys where key_padding_mask [B, T_k] is False excluded."""
    use_triton("sdpa_bidirectional", q, k, v, supported=False, reason="no Triton kernel yet")
    mask = None if key_padding_mask is None else key_padding_mask[:, None, None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
