"""Audio out of the server as it is made: the joined signal released chunk by chunk, and an incremental encoder
per response format.

pcm is the samples as they come; wav is a header whose sizes say "unknown" (0xFFFFFFFF, what streaming WAV
writers such as ffmpeg's send; browsers, ffmpeg and libsndfile read to the end of the data) followed by the
samples; mp3, opus (in Ogg, 20 ms pages) and aac (ADTS) go through PyAV's encoders (its wheels carry
ffmpeg, libmp3lame and libopus), each encoded block's bytes sent as soon as the muxer writes them. An
encoder's first bytes can lag its first samples by a codec frame (mp3 1152 samples, aac 1024); the rest
comes when `finish()` flushes it. flac is the one format sent whole, at the end: a FLAC stream's header
(STREAMINFO) carries the total length, which is known only at the end, and libsndfile (soundfile) cannot
read a FLAC whose header says "unknown".
"""
from __future__ import annotations

import io
import struct

import numpy as np

from tilewave.engine.pipeline import CROSSFADE_SAMPLES

# OpenAI's response_format names -> media type (OpenAI's own: audio/mpeg for mp3, audio/opus for Ogg Opus)
MEDIA_TYPES = {"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac",
               "wav": "audio/wav", "pcm": "audio/pcm"}
# format -> (PyAV container, codec, container options)
_AV_FORMATS = {"mp3": ("mp3", "libmp3lame", {}), "opus": ("ogg", "libopus", {"page_duration": "20000"}),
               "aac": ("adts", "aac", {})}
_UNKNOWN = 0xFFFFFFFF


class EagerJoiner:
    """pipeline.join_chunks made as chunks come, releasing every sample as soon as it is final: all of a chunk
    but the last CROSSFADE_SAMPLES, which the next chunk fades into (pipeline.Joiner holds a whole chunk back,
    which would delay a stream's first audio until its second chunk). The concatenation of push()es and
    finish() is join_chunks' output."""

    def __init__(self, crossfade: int = CROSSFADE_SAMPLES) -> None:
        self.crossfade, self._held = crossfade, None

    def push(self, audio: np.ndarray) -> np.ndarray:
        a = np.asarray(audio, dtype=np.float32).reshape(-1)
        head = np.zeros(0, dtype=np.float32)
        if self._held is not None:
            held = self._held
            n = min(held.size, a.size)  # join_chunks' min(crossfade, rest of the last chunk, this chunk)
            ramp = (np.arange(n, dtype=np.float32) + 1) / (n + 1)
            head = np.concatenate([held[:held.size - n], held[held.size - n:] * (1 - ramp) + a[:n] * ramp])
            a = a[n:]
        keep = min(self.crossfade, a.size)
        self._held = a[a.size - keep:]
        return np.concatenate([head, a[:a.size - keep]])

    def finish(self) -> np.ndarray:
        held, self._held = self._held, None
        return np.zeros(0, dtype=np.float32) if held is None else held


def _int16(audio: np.ndarray) -> np.ndarray:
    return np.round(np.clip(audio, -1.0, 1.0) * 32767).astype("<i2")


class _Pcm:
    def __init__(self, rate: int) -> None:
        self.rate = rate

    def encode(self, audio: np.ndarray) -> bytes:
        return _int16(audio).tobytes()

    def finish(self) -> bytes:
        return b""

    def close(self) -> None:
        pass


class _Wav(_Pcm):
    def __init__(self, rate: int) -> None:
        super().__init__(rate)
        self._header = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", _UNKNOWN, b"WAVE", b"fmt ", 16, 1, 1, rate,
                                   rate * 2, 2, 16, b"data", _UNKNOWN)

    def encode(self, audio: np.ndarray) -> bytes:
        header, self._header = self._header, b""
        return header + super().encode(audio)


class _Flac(_Pcm):
    def __init__(self, rate: int) -> None:
        super().__init__(rate)
        self._blocks: list[np.ndarray] = []

    def encode(self, audio: np.ndarray) -> bytes:
        self._blocks.append(audio)
        return b""

    def finish(self) -> bytes:
        import soundfile

        audio = np.concatenate(self._blocks) if self._blocks else np.zeros(0, dtype=np.float32)
        buf = io.BytesIO()
        soundfile.write(buf, _int16(audio), self.rate, format="FLAC", subtype="PCM_16")  # the other formats' rounding
        return buf.getvalue()


class _Sink:
    """A write-only file for PyAV: it keeps what the muxer writes until taken."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


class _AvEncoder:
    def __init__(self, fmt: str, rate: int) -> None:
        import av

        container, codec, options = _AV_FORMATS[fmt]
        self._av, self.rate, self._sink = av, rate, _Sink()
        self._out = av.open(self._sink, "w", format=container, options=options)
        self._stream = self._out.add_stream(codec, rate=rate, layout="mono")
        self._pts, self._closed = 0, False

    def encode(self, audio: np.ndarray) -> bytes:
        if audio.size:
            frame = self._av.AudioFrame.from_ndarray(_int16(audio)[None], format="s16", layout="mono")
            frame.sample_rate, frame.pts = self.rate, self._pts
            self._pts += audio.size
            for packet in self._stream.encode(frame):
                self._out.mux(packet)
        return self._sink.take()

    def finish(self) -> bytes:
        for packet in self._stream.encode(None):
            self._out.mux(packet)
        self.close()
        return self._sink.take()

    def close(self) -> None:
        """Free the codec (also of a response that ended early, before finish())."""
        if not self._closed:
            self._closed = True
            self._out.close()


def encoder(fmt: str, rate: int):
    """An incremental encoder: encode(float32 samples) -> bytes ready to send, finish() -> the rest."""
    if fmt == "pcm":
        return _Pcm(rate)
    if fmt == "wav":
        return _Wav(rate)
    if fmt == "flac":
        return _Flac(rate)
    return _AvEncoder(fmt, rate)
