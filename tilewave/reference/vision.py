"""Vision and video front-end ops in PyTorch: the CPU path of tilewave.ops.vision and the peers of
tilewave/kernels/vision.py."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tilewave.reference.conv2d import as_pair

MODES = ("bilinear", "bicubic")  # resize_normalize's interpolations
LUMA_BT601 = (0.299, 0.587, 0.114)


def check_resize_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"resize_normalize: mode must be one of {MODES}, got {mode!r}")


def transpose_th_torch(x):
    return x.transpose(0, 1).contiguous()


def resize_normalize_torch(image, size, mean, std, mode="bicubic"):
    check_resize_mode(mode)
    x = image.movedim(-1, -3)
    batched = x.dim() == 4
    y = F.interpolate(x if batched else x[None], size=as_pair(size, "size"), mode=mode, align_corners=False,
                      antialias=False)
    mean = torch.as_tensor(mean, dtype=y.dtype, device=y.device).view(3, 1, 1)
    std = torch.as_tensor(std, dtype=y.dtype, device=y.device).view(3, 1, 1)
    y = (y - mean) / std
    return y if batched else y[0]


def avg_pool2d_nhwc_torch(x, kernel, stride=None, padding=0):
    y = F.avg_pool2d(x.permute(0, 3, 1, 2), kernel, stride, padding, count_include_pad=False)
    return y.permute(0, 2, 3, 1)


def pos_emb_2d_add_torch(tok, pos_x, pos_y):
    W, D = pos_x.shape
    return tok + (pos_y[:, None, :] + pos_x[None, :, :]).reshape(-1, D)


def luma(frames: torch.Tensor) -> torch.Tensor:
    return frames @ torch.tensor(LUMA_BT601, dtype=frames.dtype, device=frames.device)


def frame_diff_luma_torch(f0, f1, grid):
    size = as_pair(grid, "grid")
    l0, l1 = luma(f0), luma(f1)
    batched = l0.dim() == 3  # adaptive_avg_pool2d needs a leading batch or channel axis
    d = (F.adaptive_avg_pool2d(l0 if batched else l0[None], size)
         - F.adaptive_avg_pool2d(l1 if batched else l1[None], size)).abs()
    return d if batched else d[0]
