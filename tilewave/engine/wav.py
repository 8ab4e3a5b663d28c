"""The one way audio leaves the engine, clipped to [-1, 1] and encoded by soundfile (libsndfile): a file whose
format its name says (16-bit PCM WAV, 16-bit FLAC, Ogg Vorbis, MP3), or bytes in a named format (the server)."""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from tilewave.assets import atomic_file
from tilewave.errors import InputError

# file name suffix -> (soundfile format, subtype)
AUDIO_FORMATS = {".wav": ("WAV", "PCM_16"), ".flac": ("FLAC", "PCM_16"), ".ogg": ("OGG", "VORBIS"),
                 ".mp3": ("MP3", "MPEG_LAYER_III")}


def audio_format(path: str | os.PathLike) -> tuple[str, str]:
    """(format, subtype) for a file name; a name without a known audio suffix is refused before any work."""
    suffix = Path(path).suffix.lower()
    if suffix not in AUDIO_FORMATS:
        what = f"{suffix} is not an audio format we write" if suffix else "no file suffix"
        raise InputError(f"cannot write {str(path)!r}: {what}; name it {', '.join(AUDIO_FORMATS)}")
    return AUDIO_FORMATS[suffix]


def encode_audio(audio: np.ndarray, sample_rate: int, fmt: str = "WAV", subtype: str = "PCM_16") -> bytes:
    import soundfile

    if not np.isfinite(audio).all():
        raise ValueError("refusing to encode audio with NaN or infinite samples")
    buf = io.BytesIO()
    # libsndfile wraps out-of-range floats around when converting to integers; clip first.
    # raw samples are little-endian whatever the host (what "pcm" promises); other formats carry their own
    soundfile.write(buf, np.clip(audio, -1.0, 1.0), sample_rate, format=fmt, subtype=subtype,
                    endian="LITTLE" if fmt == "RAW" else "FILE")
    return buf.getvalue()


def write_audio(path: str | os.PathLike, audio: np.ndarray, sample_rate: int) -> None:
    """Encode as the file name says, write the whole file beside its destination, then rename it: never a
    partial file at `path`."""
    data = encode_audio(audio, sample_rate, *audio_format(path))
    with atomic_file(path, suffix=Path(path).suffix) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def write_audio_stream(path: str | os.PathLike, blocks: Iterable[np.ndarray], sample_rate: int) -> int:
    """Encode consecutive blocks of one signal as they come (clipped as encode_audio clips) into a file beside
    `path`, renamed to it once the last block is in: a failure, also in whatever makes the blocks, leaves no
    file at `path`. Returns the number of samples written."""
    import soundfile

    fmt, subtype = audio_format(path)
    written = 0
    with atomic_file(path, suffix=Path(path).suffix) as tmp:
        with soundfile.SoundFile(tmp, "w", sample_rate, 1, subtype, format=fmt) as f:
            for block in blocks:
                if not np.isfinite(block).all():
                    raise ValueError("refusing to encode audio with NaN or infinite samples")
                f.write(np.clip(block, -1.0, 1.0))
                written += block.size
    return written
