"""BigVGAN's log-mel front-end, the one its training used (bigvgan.meldataset.mel_spectrogram):

  reflect-pad the waveform by (n_fft - hop) / 2 on both sides, STFT with center=False and a periodic Hann
  window of win_size, magnitude sqrt(re^2 + im^2 + 1e-9), slaney-normalised slaney-scale mel filterbank
  (librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax), built here in NumPy), natural log of max(mel, 1e-5).
  Frames: N // hop for N a multiple of hop, so that the generator's x hop upsampling gives N samples back.
"""
from __future__ import annotations

import functools

import torch

from tilewave.errors import InputError
from tilewave.ops.spectral import hz_to_mel, mel_spectrogram, mel_to_hz, slaney_mel_filterbank

__all__ = ["hz_to_mel", "log_mel", "mel_to_hz", "slaney_mel_filterbank"]

@functools.lru_cache(maxsize=8)
def _basis(sr: int, n_fft: int, n_mels: int, fmin: float, fmax: float | None) -> torch.Tensor:
    return torch.from_numpy(slaney_mel_filterbank(sr, n_fft, n_mels, fmin, fmax)).float()


def log_mel(wav: torch.Tensor, *, sampling_rate: int, n_fft: int, num_mels: int, hop_size: int, win_size: int,
            fmin: float = 0.0, fmax: float | None = None) -> torch.Tensor:
    """wav [B, N] or [N] in [-1, 1] -> log-mel [B, num_mels, frames] float32 (frames = N // hop for N % hop == 0)."""
    x = wav if wav.dim() == 2 else wav.reshape(1, -1)
    pad = (n_fft - hop_size) // 2
    if x.shape[-1] <= pad:
        raise InputError(f"audio of {x.shape[-1]} samples is too short for a mel spectrogram with n_fft {n_fft} "
                         f"and hop {hop_size}: give at least {pad + 1} samples")
    if x.shape[-1] + 2 * pad < n_fft:
        raise InputError(f"audio of {wav.shape[-1]} samples is shorter than one STFT frame ({n_fft} samples "
                         f"after padding); give at least {n_fft - 2 * pad} samples")
    mel = _basis(sampling_rate, n_fft, num_mels, float(fmin), None if fmax is None else float(fmax)).to(x.device)
    return mel_spectrogram(x.float().contiguous(), mel, n_fft, hop_size, win_size, magnitude=True, center=False,
                           reflect_pad=pad, eps=1e-5, magnitude_eps=1e-9)
