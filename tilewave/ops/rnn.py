"""LSTM ops with PyTorch semantics (gate order i, f, g, o; bias = b_ih + b_hh), batch-first."""
from __future__ import annotations

import torch

from tilewave.ops.dispatch import use_triton

LSTMParams = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]  # w_ih [4H, I], w_hh [4H, H], b_ih, b_hh


def lstm(x: torch.Tensor, directions: list[LSTMParams] | tuple[LSTMParams, ...]) -> torch.Tensor:
    """x [B, T, I] -> [B, T, D*H]: one direction (forward) or two (forward into [0, H), backward into [H, 2H))."""
    if len(directions) not in (1, 2):
        raise ValueError(f"lstm takes 1 or 2 directions, got {len(directions)}")
    use_triton("lstm", x, *[t for d in directions for t in d], supported=False, reason="no Triton kernel yet")
    flat = [t for d in directions for t in d]
    H = directions[0][1].shape[1]
    h0 = x.new_zeros(len(directions), x.shape[0], H)
    out, _, _ = torch._VF.lstm(x, (h0, h0), flat, True, 1, 0.0, False, len(directions) == 2, True)
    return out
