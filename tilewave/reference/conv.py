"""The fused 1-D conv in PyTorch: the CPU path of tilewave.ops.conv.conv1d_fused and the peer of
tilewave/kernels/conv (plain and transposed convs run on F.conv1d / F.conv_transpose1d)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

ACTS = ("none", "leaky_relu", "snake")  # the input activations conv1d_fused takes


def activate_torch(x, act="none", slope=0.0, alpha=None, beta=None):
    if act == "leaky_relu":
        return F.leaky_relu(x, slope)
    if act == "snake":
        a = alpha.view(-1, 1)
        b = a if beta is None else beta.view(-1, 1)
        return x + torch.sin(a * x).pow(2) / (b + 1e-9)
    return x


def conv1d_fused_torch(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act="none",
                       slope=0.0, alpha=None, beta=None, residual=None, scale=1.0, transposed=False,
                       output_padding=0, **_):
    x = activate_torch(x, act, slope, alpha, beta)
    if transposed:
        y = F.conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation)
    else:
        y = F.conv1d(x, weight, bias, stride, padding, dilation, groups)
    if residual is not None:
        y = y + residual
    return y * scale if scale != 1.0 else y
