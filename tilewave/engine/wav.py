"""The one way audio leaves the engine: 16-bit PCM WAV (what every player reads), clipped to [-1, 1]."""
from __future__ import annotations

import io
import os
import tempfile

import numpy as np


def wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    import soundfile

    if not np.isfinite(audio).all():
        raise ValueError("refusing to encode audio with NaN or infinite samples")
    buf = io.BytesIO()
    # libsndfile wraps out-of-range floats around when converting to integers; clip first.
    soundfile.write(buf, np.clip(audio, -1.0, 1.0), sample_rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def write_wav(path: str | os.PathLike, audio: np.ndarray, sample_rate: int) -> None:
    """Write the whole file beside its destination, then rename it: never a partial file at `path`."""
    data = wav_bytes(audio, sample_rate)
    fd, tmp = tempfile.mkstemp(suffix=".wav", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the WAV gets the permissions of any new file
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
