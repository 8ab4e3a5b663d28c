"""LSTMs on torch's own kernels (cuDNN on the GPU): the CPU path of tilewave.ops.rnn and the peers of
tilewave/kernels/rnn.py and lstm_batched.py."""
from __future__ import annotations

import torch


def lstm_torch_flat(x, flat: list[torch.Tensor], bidirectional: bool, lengths=None) -> torch.Tensor:
    """torch's LSTM on flat [w_ih, w_hh, b_ih, b_hh] * D; lengths through pack_padded_sequence."""
    from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

    D = 2 if bidirectional else 1
    H = flat[1].shape[1]
    h0 = x.new_zeros(D, x.shape[0], H)
    if lengths is None:
        return torch._VF.lstm(x, (h0, h0), flat, True, 1, 0.0, False, bidirectional, True)[0]
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    data = torch._VF.lstm(packed.data, packed.batch_sizes, (h0, h0), flat, True, 1, 0.0, False, bidirectional)[0]
    out = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]


def lstm_torch(x, w_ih, w_hh, b_ih, b_hh, lengths=None, reverse=False, path=None):
    """The peer for stacked weights. torch has no backward-only LSTM: run both directions on the
    backward weights and keep the backward half."""
    if reverse:
        flat = [w_ih[0], w_hh[0], b_ih[0], b_hh[0]] * 2
        return lstm_torch_flat(x, flat, True, lengths)[..., w_hh.shape[2]:]
    flat = [t[d] for d in range(w_ih.shape[0]) for t in (w_ih, w_hh, b_ih, b_hh)]
    return lstm_torch_flat(x, flat, w_ih.shape[0] == 2, lengths)


def lstm_cell_torch(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return torch._VF.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
