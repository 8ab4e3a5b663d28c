"""LSTM ops with PyTorch semantics (gate order i, f, g, o; bias = b_ih + b_hh), batch-first."""
from __future__ import annotations

import torch

from tilewave import precision
from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.rnn import lstm_cell_torch, lstm_torch_flat

LSTMParams = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]  # w_ih [4H, I], w_hh [4H, H], b_ih, b_hh


def lstm(x: torch.Tensor, directions: list[LSTMParams] | tuple[LSTMParams, ...],
         lengths: torch.Tensor | None = None) -> torch.Tensor:
    """x [B, T, I] -> [B, T, D*H]: one direction (forward) or two (forward into [0, H), backward into [H, 2H)).

    lengths [B] (optional): steps t >= lengths[b] leave the state untouched and output zeros, as
    pack_padded_sequence followed by pad_packed_sequence does.
    """
    if len(directions) not in (1, 2):
        raise ValueError(f"lstm takes 1 or 2 directions, got {len(directions)}")
    flat = [t for d in directions for t in d]
    fp32 = all(t.dtype == torch.float32 for t in (x, *flat))
    if use_triton("lstm", x, *flat, supported=fp32,
                  reason=f"recurrences run in float32 only, got {sorted({str(t.dtype) for t in (x, *flat)})}"):
        w_ih, w_hh, b_ih, b_hh = (torch.stack(ts) for ts in zip(*directions))
        batched = kernels("lstm_batched")
        if w_hh.shape[2] <= batched.MAX_HIDDEN:
            # every step's recurrent product for a few items a row at a time in exact FMAs, for more as one product
            # (tl.dot) per block of items (the kernel's ROWS_MAX_B: at batch 1 a row step is far shorter than the
            # one-sequence kernel's; benchmarks/RESULTS.md). Float32-class in every mode: exact at
            # 'ieee' and in rows, three TF32 MMAs otherwise ('tf32' too: the recurrences decide the durations, which
            # no mode may change)
            return batched.lstm_batched(x.contiguous(), w_ih, w_hh, b_ih, b_hh, lengths=lengths,
                                        precision=precision.float32_class_mode())
        return kernels("rnn").lstm(x.contiguous(), w_ih, w_hh, b_ih, b_hh, lengths=lengths)
    if lengths is None:
        return lstm_torch_flat(x, flat, len(directions) == 2)
    # Item by item on its own steps (not pack_padded_sequence): the batched CPU products round differently
    # from a solo run's, and Kokoro's harmonic source turns rounding-level F0 changes into waveform changes
    # (its phase runs to thousands of radians), so each item repeats its solo run's arithmetic exactly.
    out = x.new_zeros(x.shape[0], x.shape[1], len(directions) * directions[0][1].shape[1])
    for b, n in enumerate(lengths.tolist()):
        out[b, :n] = lstm_torch_flat(x[b:b + 1, :n], flat, len(directions) == 2)[0]
    return out


def lstm_cell(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, params: LSTMParams) -> tuple[torch.Tensor, torch.Tensor]:
    """One step for a batch: x [B, I], h, c [B, H] -> (h', c')."""
    fp32 = all(t.dtype == torch.float32 for t in (x, h, c, *params))
    if use_triton("lstm_cell", x, h, c, *params, supported=fp32, reason="recurrences run in float32 only"):
        return kernels("rnn").lstm_cell(x.contiguous(), h.contiguous(), c.contiguous(),
                                        *(t.contiguous() for t in params))
    return lstm_cell_torch(x, h, c, *params)
