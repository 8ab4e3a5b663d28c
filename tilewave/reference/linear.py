"""A linear layer with its epilogue in PyTorch, op by op: the peer of tilewave/kernels/linear.py, the form its
float64 oracle takes, and ops.linear's path off the kernel (there with the GELU op, a kernel of its own on a GPU)."""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from tilewave.reference.activation import gelu_tanh_torch


def linear_torch(x, weight, bias=None, act="none", residual=None,
                 gelu: Callable[[torch.Tensor], torch.Tensor] = gelu_tanh_torch):
    """act(F.linear(x, weight, bias)) + residual; act 'none' or 'gelu_tanh' (computed by `gelu`)."""
    y = F.linear(x, weight, bias)
    if act == "gelu_tanh":
        y = gelu(y)
    return y if residual is None else residual + y
