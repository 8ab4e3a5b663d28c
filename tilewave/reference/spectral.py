"""The Slaney mel scale and filterbank (librosa's htk=False, norm="slaney"), float64 NumPy: what the models
build their mel bases from, and the inputs of tilewave/kernels/spectral's mel cases."""
from __future__ import annotations

import numpy as np

_F_SP = 200.0 / 3  # Slaney mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above

_MIN_LOG_HZ = 1000.0

_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP

_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(f) -> np.ndarray:
    f = np.asarray(f, dtype=np.float64)
    return np.where(f >= _MIN_LOG_HZ, _MIN_LOG_MEL + np.log(np.maximum(f, 1e-12) / _MIN_LOG_HZ) / _LOGSTEP,
                    f / _F_SP)


def mel_to_hz(m) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return np.where(m >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)), _F_SP * m)


def slaney_mel_filterbank(sample_rate: int, n_fft: int, n_mels: int, fmin: float = 0.0,
                          fmax: float | None = None) -> np.ndarray:
    """librosa.filters.mel(htk=False, norm='slaney') [n_mels, n_fft//2 + 1] float64: triangles between
    Slaney-mel-spaced edges, each scaled by 2 / its width in Hz (constant energy per band)."""
    fmax = sample_rate / 2 if fmax is None else float(fmax)
    hz = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fft_hz = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    fdiff = np.diff(hz)
    ramps = hz[:, None] - fft_hz[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    return weights * (2.0 / (hz[2:n_mels + 2] - hz[:n_mels]))[:, None]
