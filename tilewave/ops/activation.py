"""Activation ops as the models call them: Triton on CUDA, PyTorch elsewhere."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.activation import gelu_tanh_torch, snake_torch


def snake(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False):
    if use_triton("snake", x, alpha, beta, supported=x.is_contiguous()):
        return kernels("activation").snake(x, alpha, beta, log_scale)
    return snake_torch(x, alpha, beta, log_scale)


def leaky_relu(x: torch.Tensor, slope: float):
    if use_triton("leaky_relu", x, supported=x.is_contiguous()):
        return kernels("activation").leaky_relu(x, slope)
    return F.leaky_relu(x, slope)


def gelu_erf(x: torch.Tensor):
    if use_triton("gelu_erf", x, supported=x.is_contiguous()):
        return kernels("activation").gelu_erf(x)
    return F.gelu(x, approximate="none")


def gelu_tanh(x: torch.Tensor):
    """GELU's tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), BERT/ALBERT's "gelu_new"."""
    if use_triton("gelu_tanh", x, supported=x.is_contiguous()):
        return kernels("activation").gelu_tanh(x)
    return gelu_tanh_torch(x)  # written out (not F.gelu(approximate="tanh")): rounds as ALBERT's "gelu_new"


def clamp_scalar(x: torch.Tensor, lo: float, hi: float):
    if use_triton("clamp_scalar", x, supported=x.is_contiguous()):
        return kernels("activation").clamp_scalar(x, lo, hi)
    return torch.clamp(x, lo, hi)


def upsample_nearest1d(x: torch.Tensor, factor: int):
    if use_triton("upsample_nearest1d", x, supported=x.is_contiguous()):
        return kernels("activation").upsample_nearest1d(x, factor)
    return x.repeat_interleave(factor, dim=-1)
