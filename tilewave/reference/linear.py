"""A linear layer with its epilogue in PyTorch, op by op: the peer of tilewave/kernels/linear.py and the form its
float64 oracle takes (ops.linear runs the same ops, with the GELU on its own op, off the kernel)."""
from __future__ import annotations

import torch.nn.functional as F

from tilewave.reference.activation import gelu_tanh_torch


def linear_torch(x, weight, bias=None, act="none", residual=None):
    """act(F.linear(x, weight, bias)) + residual; act 'none' or 'gelu_tanh'."""
    y = F.linear(x, weight, bias)
    if act == "gelu_tanh":
        y = gelu_tanh_torch(y)
    return y if residual is None else residual + y
