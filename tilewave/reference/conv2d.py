"""Depthwise 2-D conv and patch im2col in PyTorch (channel-last): the CPU path of tilewave.ops.vision and the
peers of tilewave/kernels/conv2d.py."""
from __future__ import annotations

import torch.nn.functional as F


def as_pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a (height, width) pair, got {v!r}")
    return int(v[0]), int(v[1])


def depthwise_conv2d_nhwc_torch(x, weight, bias=None, stride=1, padding=0):
    y = F.conv2d(x.permute(0, 3, 1, 2), weight[:, None], bias, as_pair(stride, "stride"),
                 as_pair(padding, "padding"), groups=x.shape[-1])
    return y.permute(0, 2, 3, 1)


def im2col_patch_torch(x, patch):
    N, C = x.shape[:2]
    t = x.unfold(2, patch, patch).unfold(3, patch, patch)  # [N, C, gh, gw, p, p]
    return t.permute(0, 2, 3, 1, 4, 5).reshape(N, t.shape[2] * t.shape[3], C * patch * patch)
