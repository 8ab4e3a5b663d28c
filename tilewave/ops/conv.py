"""Convolution ops (NCL layout; weight OIK for conv, IOK for transposed conv), same arguments as torch.nn.functional.

The Triton kernels for these live in tilewave.kernels.conv; until a case is covered there, PyTorch runs it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tilewave.ops.dispatch import use_triton


def conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride: int = 1,
           padding: int = 0, dilation: int = 1, groups: int = 1) -> torch.Tensor:
    use_triton("conv1d", x, weight, bias, supported=False, reason="no Triton conv1d kernel yet")
    return F.conv1d(x, weight, bias, stride, padding, dilation, groups)


def conv1d_transpose(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride: int = 1,
                     padding: int = 0, output_padding: int = 0, groups: int = 1,
                     dilation: int = 1) -> torch.Tensor:
    use_triton("conv1d_transpose", x, weight, bias, supported=False, reason="no Triton kernel yet")
    return F.conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation)
