"""BigVGAN's anti-aliased activation in PyTorch (the CPU path of tilewave.ops.resample and the peer of
tilewave/kernels/antialias.py) and the x2 resampling filter both paths use."""
from __future__ import annotations

import functools
import math

import numpy as np
import torch
import torch.nn.functional as F

from tilewave.reference.activation import snake_torch

TAPS = 12  # BigVGAN's filters (the ones its CUDA kernel hard-codes)


def kaiser_sinc_filter(cutoff: float, half_width: float, taps: int) -> np.ndarray:
    """Kaiser-windowed sinc low-pass with unit DC gain (Kaiser's beta from the transition width), float64."""
    half = taps // 2
    atten = 2.285 * (half - 1) * math.pi * 4 * half_width + 7.95
    if atten > 50.0:
        beta = 0.1102 * (atten - 8.7)
    elif atten >= 21.0:
        beta = 0.5842 * (atten - 21) ** 0.4 + 0.07886 * (atten - 21.0)
    else:
        beta = 0.0
    t = np.arange(-half, half) + 0.5 if taps % 2 == 0 else np.arange(taps) - half
    f = 2 * cutoff * np.kaiser(taps, beta) * np.sinc(2 * cutoff * t)
    return f / f.sum()


@functools.lru_cache(maxsize=None)
def _resample_filter_cpu(taps: int) -> torch.Tensor:
    return torch.from_numpy(kaiser_sinc_filter(0.25, 0.3, taps)).float()


def resample_filter(taps: int = TAPS, device: torch.device | str = "cpu") -> torch.Tensor:
    """The x2 up/down filter of BigVGAN's Activation1d (cutoff 0.25, half-width 0.3), float32 [taps]."""
    return _resample_filter_cpu(taps).to(device)


def act1d_torch(x, alpha, beta=None, log_scale=False, up_filter=None, down_filter=None):
    """The eager chain of bigvgan's torch Activation1d: pad, transposed conv, crop, snake, pad, strided conv.
    16-bit x is computed in float32 (as the kernel does) and the result stored in x's dtype."""
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    fu = (resample_filter(device=x.device) if up_filter is None else up_filter).to(work).reshape(1, 1, -1)
    fd = (resample_filter(device=x.device) if down_filter is None else down_filter).to(work).reshape(1, 1, -1)
    x3 = (x if x.dim() == 3 else x.unsqueeze(0)).to(work)
    C, K = x3.shape[1], fu.shape[-1]
    pad = K // 2 - 1
    u = 2 * F.conv_transpose1d(F.pad(x3, (pad, pad), mode="replicate"), fu.expand(C, -1, -1), stride=2, groups=C)
    u = u[..., 2 * pad + (K - 2) // 2: u.shape[-1] - (2 * pad + (K - 1) // 2)]
    a = snake_torch(u, alpha.to(work), None if beta is None else beta.to(work), log_scale)
    Kd = fd.shape[-1]
    a = F.pad(a, (Kd // 2 - (Kd % 2 == 0), Kd // 2), mode="replicate")
    y = F.conv1d(a, fd.expand(C, -1, -1), stride=2, groups=C).to(x.dtype)
    return y if x.dim() == 3 else y.squeeze(0)
