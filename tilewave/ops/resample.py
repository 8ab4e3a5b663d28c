"""Resampling ops as the models call them: Triton on CUDA, PyTorch elsewhere."""
from __future__ import annotations

import torch

from tilewave.kernels import antialias as K
from tilewave.kernels.antialias import TAPS, resample_filter  # noqa: F401 (the models build their filters here)
from tilewave.ops.dispatch import use_triton


def act1d(x: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor | None = None, log_scale: bool = False,
          up_filter: torch.Tensor | None = None, down_filter: torch.Tensor | None = None) -> torch.Tensor:
    """BigVGAN's anti-aliased activation: x2 upsample (replicate pad), snake (beta None) or snakebeta, x2 low-pass.

    x [B, C, L] or [C, L]; alpha, beta [C] (exp'd when log_scale); filters [K] (None: the 12-tap Kaiser sinc
    that bigvgan builds, cutoff 0.25, half-width 0.3). Returns y with x's shape and dtype.
    """
    up = K.resample_filter(device=x.device) if up_filter is None else up_filter.reshape(-1)
    down = K.resample_filter(device=x.device) if down_filter is None else down_filter.reshape(-1)
    if use_triton("act1d", x, alpha, beta, up, down, supported=K.kernel_covers(x, up, down),
                  reason="act1d kernel needs contiguous x and equal filters of 4k taps"):
        return K.act1d(x, alpha, beta, log_scale, up, down)
    return K.act1d_torch(x, alpha, beta, log_scale, up, down)
