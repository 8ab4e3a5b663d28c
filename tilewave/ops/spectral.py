"""Spectral ops: STFT/iSTFT with a periodic Hann window, center=True reflect padding, and mel front-ends."""
from __future__ import annotations

import torch

from tilewave.ops.dispatch import use_triton


def _hann(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.hann_window(n, periodic=True, device=like.device, dtype=like.dtype)


def stft_mag_phase(x: torch.Tensor, n_fft: int, hop: int, win_length: int | None = None):
    """x [B, N] -> (magnitude, phase), each [B, n_fft // 2 + 1, frames]; phase = atan2(im, re)."""
    win_length = win_length or n_fft
    use_triton("stft", x, supported=False, reason="no Triton kernel yet")
    spec = torch.stft(x, n_fft, hop, win_length, window=_hann(win_length, x), center=True,
                      pad_mode="reflect", return_complex=True)
    return spec.abs(), spec.angle()


def istft_mag_phase(magnitude: torch.Tensor, phase: torch.Tensor, n_fft: int, hop: int,
                    win_length: int | None = None) -> torch.Tensor:
    """Inverse of stft_mag_phase (overlap-add divided by the window-square sum): [B, F, frames] -> [B, N]."""
    win_length = win_length or n_fft
    use_triton("istft", magnitude, phase, supported=False, reason="no Triton kernel yet")
    spec = torch.polar(magnitude, phase)
    return torch.istft(spec, n_fft, hop, win_length, window=_hann(win_length, magnitude), center=True)


def istft_exp_sin(x: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
    """The iSTFTNet generator tail: x [B, 2F, frames] -> magnitude exp(x[:, :F]), phase sin(x[:, F:]) -> iSTFT."""
    F_ = n_fft // 2 + 1
    use_triton("istft_exp_sin", x, supported=False, reason="no Triton kernel yet")
    return istft_mag_phase(torch.exp(x[:, :F_]), torch.sin(x[:, F_:]), n_fft, hop)
