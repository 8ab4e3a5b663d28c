"""The harmonic source in PyTorch: the CPU path of tilewave.ops.spectral.harmonic_source and the peer of
tilewave/kernels/source.py."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def harmonic_source_torch(f0, merge_weight, merge_bias, rand_ini, noise, *, sample_rate, upsample_scale,
                          sine_amp=0.1, noise_std=0.003, voiced_threshold=10.0):
    """The reference's operations in its order (float32 phase): bit-equal to Kokoro's SourceModuleHnNSF."""
    K = merge_weight.shape[-1]
    harmonics = torch.arange(1, K + 1, device=f0.device, dtype=f0.dtype)
    rad = (f0 * harmonics / sample_rate) % 1
    rad[:, 0, :] = rad[:, 0, :] + rand_ini
    rad = F.interpolate(rad.transpose(1, 2), scale_factor=1 / upsample_scale, mode="linear")
    phase = torch.cumsum(rad, dim=-1) * 2 * torch.pi
    phase = F.interpolate(phase * upsample_scale, scale_factor=upsample_scale, mode="linear")
    sines = torch.sin(phase).transpose(1, 2) * sine_amp
    uv = (f0 > voiced_threshold).to(f0.dtype)
    amp = uv * noise_std + (1 - uv) * sine_amp / 3
    excitation = sines * uv + amp * noise
    return torch.tanh(F.linear(excitation, merge_weight, merge_bias))
