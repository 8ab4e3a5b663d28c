"""Vision and video front-end ops as models call them: Triton on CUDA, PyTorch elsewhere.

Layouts and formulas are those of tilewave.kernels.vision and tilewave.kernels.conv2d. The Triton
kernels read contiguous inputs in float32, float16 or bfloat16; anything else takes the PyTorch path
(recorded in placements()).
"""
from __future__ import annotations

import torch

from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.conv2d import depthwise_conv2d_nhwc_torch, im2col_patch_torch
from tilewave.reference.vision import (avg_pool2d_nhwc_torch, frame_diff_luma_torch, pos_emb_2d_add_torch,
                                       resize_normalize_torch, transpose_th_torch)

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _covered(*tensors: torch.Tensor | None) -> tuple[bool, str]:
    given = [t for t in tensors if t is not None]
    for t in given:
        if t.dtype not in _FLOATS:
            return False, f"dtype {t.dtype} (kernels cover float32, float16, bfloat16)"
        if t.dtype != given[0].dtype:
            return False, f"mixed dtypes {given[0].dtype} and {t.dtype}"
        if not t.is_contiguous():
            return False, "non-contiguous input"
    return True, ""


def depthwise_conv2d_nhwc(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                          stride=1, padding=0) -> torch.Tensor:
    """x [N, H, W, C], weight [C, kh, kw], bias [C] -> [N, Ho, Wo, C] (Conv2d with groups = C, channel-last)."""
    ok, why = _covered(x, weight, bias)
    if use_triton("depthwise_conv2d_nhwc", x, weight, bias, supported=ok, reason=why):
        return kernels("conv2d").depthwise_conv2d_nhwc(x, weight, bias, stride, padding)
    return depthwise_conv2d_nhwc_torch(x, weight, bias, stride, padding)


def _patch_covered(x: torch.Tensor, patch: int) -> tuple[bool, str]:
    largest = kernels("conv2d").IM2COL_P_PADS[-1]
    return (False, f"patch {patch} > {largest}") if patch > largest else _covered(x)


def im2col_patch(x: torch.Tensor, patch: int) -> torch.Tensor:
    """x [N, C, H, W] -> [N, (H // p)(W // p), C p p]: one row per non-overlapping patch, columns (c, py, px)."""
    if use_triton("im2col_patch", x, supported=lambda: _patch_covered(x, patch)):
        return kernels("conv2d").im2col_patch(x, patch)
    return im2col_patch_torch(x, patch)


def transpose_th(x: torch.Tensor) -> torch.Tensor:
    """[T, H, D] -> [H, T, D], contiguous."""
    ok, why = _covered(x)
    if use_triton("transpose_th", x, supported=ok, reason=why):
        return kernels("vision").transpose_th(x)
    return transpose_th_torch(x)


def resize_normalize(image: torch.Tensor, size, mean, std, mode: str = "bicubic") -> torch.Tensor:
    """Interleaved [(B,) H, W, 3] image in [0, 1] -> resized (align_corners=False) -> (v - mean_c) / std_c
    -> planar [(B,) 3, h, w]. mean and std: 3 values (sequences or tensors)."""
    ok, why = _covered(image)
    if use_triton("resize_normalize", image, supported=ok, reason=why):
        return kernels("vision").resize_normalize(image, size, mean, std, mode)
    return resize_normalize_torch(image, size, mean, std, mode)


def avg_pool2d_nhwc(x: torch.Tensor, kernel, stride=None, padding=0) -> torch.Tensor:
    """x [N, H, W, C] -> box mean over in-bounds taps (count_include_pad=False); stride defaults to kernel."""
    ok, why = _covered(x)
    if use_triton("avg_pool2d_nhwc", x, supported=ok, reason=why):
        return kernels("vision").avg_pool2d_nhwc(x, kernel, stride, padding)
    return avg_pool2d_nhwc_torch(x, kernel, stride, padding)


def pos_emb_2d_add(tok: torch.Tensor, pos_x: torch.Tensor, pos_y: torch.Tensor) -> torch.Tensor:
    """tok [(B,) P, D] + pos_x[p % W] + pos_y[p // W] (row-major token grid of width W = len(pos_x))."""
    ok, why = _covered(tok, pos_x, pos_y)
    if use_triton("pos_emb_2d_add", tok, pos_x, pos_y, supported=ok, reason=why):
        return kernels("vision").pos_emb_2d_add(tok, pos_x, pos_y)
    return pos_emb_2d_add_torch(tok, pos_x, pos_y)


def frame_diff_luma(f0: torch.Tensor, f1: torch.Tensor, grid) -> torch.Tensor:
    """|cell mean of BT.601 luma(f0) - that of f1| on a (rows, columns) grid of cells; frames [(B,) H, W, 3]."""
    ok, why = _covered(f0, f1)
    if use_triton("frame_diff_luma", f0, f1, supported=ok, reason=why):
        return kernels("vision").frame_diff_luma(f0, f1, grid)
    return frame_diff_luma_torch(f0, f1, grid)
