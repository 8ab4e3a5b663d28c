"""The one way audio leaves the engine: 16-bit PCM WAV (what every player reads), clipped to [-1, 1]."""
from __future__ import annotations

import io

import numpy as np


def wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    import soundfile

    if not np.isfinite(audio).all():
        raise ValueError("refusing to encode audio with NaN or infinite samples")
    buf = io.BytesIO()
    # libsndfile wraps out-of-range floats around when converting to integers; clip first.
    soundfile.write(buf, np.clip(audio, -1.0, 1.0), sample_rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()
