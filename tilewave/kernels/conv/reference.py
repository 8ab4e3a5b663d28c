"""The float64 oracles (the PyTorch paths, what tilewave.ops runs off the GPU: tilewave/reference/conv.py)."""
from __future__ import annotations

import numpy as np
import torch

from tilewave.kernels.conv.transpose import conv1d_out_len, conv1d_transpose_out_len


def conv1d_oracle(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, **_):
    """Direct definition: per group and tap, a matrix product with the strided input window."""
    x, w = x.numpy(), weight.numpy()
    B, C_in, L = x.shape
    C_out, C_in_g, K = w.shape
    C_out_g = C_out // groups
    L_out = conv1d_out_len(L, K, stride, padding, dilation)
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    y = np.zeros((B, C_out, L_out))
    for g in range(groups):
        xg, og = xp[:, g * C_in_g:(g + 1) * C_in_g], slice(g * C_out_g, (g + 1) * C_out_g)
        for k in range(K):
            window = xg[:, :, k * dilation: k * dilation + stride * (L_out - 1) + 1: stride]
            y[:, og] += w[og, :, k] @ window
    if bias is not None:
        y += bias.numpy()[None, :, None]
    return torch.from_numpy(y)


def conv1d_transpose_oracle(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                            **_):
    """Scatter form (the definition): input i, tap k lands on i·s + k·d − p; crop to the output length."""
    x, w = x.numpy(), weight.numpy()
    B, C_in, L = x.shape
    _, C_out_g, K = w.shape
    C_in_g = C_in // groups
    L_out = conv1d_transpose_out_len(L, K, stride, padding, output_padding, dilation)
    full = np.zeros((B, C_out_g * groups, (L - 1) * stride + dilation * (K - 1) + 1 + output_padding))
    for g in range(groups):
        ig, og = slice(g * C_in_g, (g + 1) * C_in_g), slice(g * C_out_g, (g + 1) * C_out_g)
        for k in range(K):
            full[:, og, k * dilation: k * dilation + stride * (L - 1) + 1: stride] += w[ig, :, k].T @ x[:, ig]
    y = full[:, :, padding: padding + L_out]
    if bias is not None:
        y = y + bias.numpy()[None, :, None]
    return torch.from_numpy(np.ascontiguousarray(y))


def conv1d_fused_oracle(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act="none",
                        slope=0.0, alpha=None, beta=None, residual=None, scale=1.0, transposed=False,
                        output_padding=0, **_):
    xa = x.numpy()
    if act == "leaky_relu":
        xa = np.where(xa > 0, xa, slope * xa)
    elif act == "snake":
        a = alpha.numpy()[:, None]
        b = a if beta is None else beta.numpy()[:, None]
        xa = xa + np.sin(a * xa) ** 2 / (b + 1e-9)
    xa = torch.from_numpy(xa)
    if transposed:
        y = conv1d_transpose_oracle(xa, weight, bias, stride, padding, output_padding, groups, dilation)
    else:
        y = conv1d_oracle(xa, weight, bias, stride, padding, dilation, groups)
    if residual is not None:
        y = y + residual
    return y * scale
