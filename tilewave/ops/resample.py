"""Resampling ops as the models call them: Triton on CUDA, PyTorch elsewhere."""
from __future__ import annotations

import torch

from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.antialias import TAPS, act1d_torch, resample_filter  # noqa: F401 (TAPS: for the models)


def _covered(x: torch.Tensor, up: torch.Tensor, down: torch.Tensor) -> tuple[bool, str]:
    return (kernels("antialias").kernel_covers(x, up, down),
            "act1d kernel needs contiguous x and equal filters of 4k taps")


def act1d(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False,
          up_filter: torch.Tensor | None = None, down_filter: torch.Tensor | None = None,
          time_major: tuple[int, int, int] | None = None):
    """BigVGAN's anti-aliased activation: x2 upsample (replicate pad), snake (beta None) or snakebeta, x2 low-pass.

    x [B, C, L] or [C, L]; alpha, beta [C] (exp'd when log_scale); filters [K] (None: the 12-tap Kaiser sinc
    that bigvgan builds, cutoff 0.25, half-width 0.3). Returns y with x's shape and dtype.
    time_major: (left, Lp, pitch), the layout ops.conv.time_major_layout asked for (x [B, C, L]): the output as that
    conv input (a kernels.conv.TimeMajor, the same values) instead.
    """
    up = resample_filter(device=x.device) if up_filter is None else up_filter.reshape(-1)
    down = resample_filter(device=x.device) if down_filter is None else down_filter.reshape(-1)
    triton_path = use_triton("act1d", x, alpha, beta, up, down, supported=lambda: _covered(x, up, down))
    if time_major is not None:
        left, Lp, pitch = time_major
        B, C, L = x.shape
        if triton_path:
            data = kernels("antialias").act1d_time_major(x, alpha, beta, log_scale, up, down, left, Lp, pitch)
        else:
            data = x.new_zeros(B, Lp, pitch)
            data[:, left:left + L, :C] = act1d_torch(x, alpha, beta, log_scale, up, down).transpose(1, 2)
        return kernels("conv").TimeMajor(data, left, C, L)
    if triton_path:
        return kernels("antialias").act1d(x, alpha, beta, log_scale, up, down)
    return act1d_torch(x, alpha, beta, log_scale, up, down)
