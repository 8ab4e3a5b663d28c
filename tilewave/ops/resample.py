"""Resampling ops as the models call them: Triton on CUDA, PyTorch elsewhere."""
from __future__ import annotations

import torch

from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.antialias import TAPS, act1d_torch, resample_filter  # noqa: F401 (TAPS: for the models)


def _covered(x: torch.Tensor, up: torch.Tensor, down: torch.Tensor) -> tuple[bool, str]:
    return (kernels("antialias").kernel_covers(x, up, down),
            "act1d kernel needs contiguous x and equal filters of 4k taps")


def act1d(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False,
          up_filter: torch.Tensor | None = None, down_filter: torch.Tensor | None = None) -> torch.Tensor:
    """BigVGAN's anti-aliased activation: x2 upsample (replicate pad), snake (beta None) or snakebeta, x2 low-pass.

    x [B, C, L] or [C, L]; alpha, beta [C] (exp'd when log_scale); filters [K] (None: the 12-tap Kaiser sinc
    that bigvgan builds, cutoff 0.25, half-width 0.3). Returns y with x's shape and dtype.
    """
    up = resample_filter(device=x.device) if up_filter is None else up_filter.reshape(-1)
    down = resample_filter(device=x.device) if down_filter is None else down_filter.reshape(-1)
    if use_triton("act1d", x, alpha, beta, up, down, supported=lambda: _covered(x, up, down)):
        return kernels("antialias").act1d(x, alpha, beta, log_scale, up, down)
    return act1d_torch(x, alpha, beta, log_scale, up, down)
