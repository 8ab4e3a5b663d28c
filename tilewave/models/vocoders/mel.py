"""BigVGAN's log-mel front-end, the one its training used (bigvgan.meldataset.mel_spectrogram):

  reflect-pad the waveform by (n_fft - hop) / 2 on both sides, STFT with center=False and a periodic Hann
  window of win_size, magnitude sqrt(re^2 + im^2 + 1e-9), slaney-normalised slaney-scale mel filterbank
  (librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax), built here in NumPy), natural log of max(mel, 1e-5).
  Frames: N // hop for N a multiple of hop, so that the generator's x hop upsampling gives N samples back.
"""
from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from tilewave.errors import InputError

_F_SP = 200.0 / 3  # slaney mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(f: np.ndarray) -> np.ndarray:
    f = np.asarray(f, dtype=np.float64)
    return np.where(f >= _MIN_LOG_HZ, _MIN_LOG_MEL + np.log(np.maximum(f, 1e-12) / _MIN_LOG_HZ) / _LOGSTEP,
                    f / _F_SP)


def mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return np.where(m >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)), _F_SP * m)


def slaney_mel_filterbank(sr: int, n_fft: int, n_mels: int, fmin: float = 0.0, fmax: float | None = None) -> np.ndarray:
    """[n_mels, 1 + n_fft // 2] float32: triangles between mel-spaced edges, each scaled by 2 / its width in Hz
    (constant energy per band), as librosa.filters.mel(norm='slaney', htk=False) computes them."""
    fmax = sr / 2.0 if fmax is None else float(fmax)
    fft_freqs = np.linspace(0, sr / 2.0, 1 + n_fft // 2)
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


@functools.lru_cache(maxsize=8)
def _basis(sr: int, n_fft: int, n_mels: int, fmin: float, fmax: float | None) -> torch.Tensor:
    return torch.from_numpy(slaney_mel_filterbank(sr, n_fft, n_mels, fmin, fmax))


def log_mel(wav: torch.Tensor, *, sampling_rate: int, n_fft: int, num_mels: int, hop_size: int, win_size: int,
            fmin: float = 0.0, fmax: float | None = None) -> torch.Tensor:
    """wav [B, N] or [N] in [-1, 1] -> log-mel [B, num_mels, frames] float32 (frames = N // hop for N % hop == 0)."""
    x = wav if wav.dim() == 2 else wav.reshape(1, -1)
    pad = (n_fft - hop_size) // 2
    if x.shape[-1] <= pad:
        raise InputError(f"audio of {x.shape[-1]} samples is too short for a mel spectrogram with n_fft {n_fft} "
                         f"and hop {hop_size}: give at least {pad + 1} samples")
    x = x.float()
    x = F.pad(x.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    if x.shape[-1] < n_fft:
        raise InputError(f"audio of {wav.shape[-1]} samples is shorter than one STFT frame ({n_fft} samples "
                         f"after padding); give at least {n_fft - 2 * pad} samples")
    window = torch.hann_window(win_size, device=x.device)
    spec = torch.stft(x, n_fft, hop_length=hop_size, win_length=win_size, window=window, center=False,
                      onesided=True, return_complex=True)
    magnitude = torch.sqrt(spec.real.square() + spec.imag.square() + 1e-9)
    mel = _basis(sampling_rate, n_fft, num_mels, float(fmin), None if fmax is None else float(fmax)).to(x.device)
    return torch.log(torch.clamp(mel @ magnitude, min=1e-5))
