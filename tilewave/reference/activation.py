"""The snake activation and GELU's tanh form in PyTorch: the CPU paths of tilewave.ops.activation and the peers of
their kernels (tilewave/kernels/activation.py). The other activations' PyTorch forms are torch's own ops."""
from __future__ import annotations

import math

import torch


def snake_torch(x, alpha, beta=None, log_scale=False):
    # 16-bit x computed in float32 and stored in its dtype, as the kernel does (float32 or float64 x: as it comes)
    work = torch.promote_types(x.dtype, torch.float32)
    a = alpha.to(work).view(-1, 1)
    b = a if beta is None else beta.to(work).view(-1, 1)
    if log_scale:
        a, b = a.exp(), b.exp()
    # x + sin(a x)^2 / (b + 1e-9) in one buffer, the last two steps one addcdiv: the same roundings, 2.4x faster
    # on the CPU at Kokoro's generator shapes (no temporaries to allocate and fault in; benchmarks/RESULTS.md)
    xw = x.to(work)
    s = torch.mul(a, xw).sin_()
    return torch.addcdiv(xw, s.mul_(s), b + 1e-9, out=s).to(x.dtype)


def gelu_tanh_torch(z: torch.Tensor) -> torch.Tensor:
    """GELU's tanh form written out as the reference ALBERT's "gelu_new" rounds it (ops.activation.gelu_tanh's CPU
    path)."""
    return 0.5 * z * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * torch.pow(z, 3.0))))
