"""Text -> the chunks a model says, the values a user gives checked once, and the seamless join of chunk audio.

    chunks = Pipeline(lang="en-us").chunks("Hello there. How are you?")   # [TextChunk(text, phonemes)]
    audio = join_chunks([chunk.audio for chunk in chunks_made])

The session (session.py) owns the device, the precision and the model, and runs chunks through the
scheduler (scheduler.py); `tilewave.speak`, `stream` and `speak_many` are there. Everything a user can get
wrong (text, voice, speed, seed, device, weights) is checked before any audio is made, and raises
InputError / WeightsError with the value and what to do.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from tilewave.errors import InputError
from tilewave.text import TextChunk, check_language, phonemizer_for
from tilewave.text.chunking import Word
from tilewave.text.frontend import iter_speakable

SAMPLE_RATE = 24_000
SPEED_RANGE = (0.5, 2.0)
# 10 ms: long enough that a join between two non-silent chunk edges has no step, short enough to be
# inaudible where the edges are silent (Kokoro's chunks start and end in near-silence).
CROSSFADE_SAMPLES = 240


@dataclass
class Chunk:
    text: str                # the words of this chunk ('' for phoneme input)
    phonemes: str            # Kokoro symbols (1-510)
    durations: torch.Tensor  # LongTensor [len(phonemes) + 2]: frames of 600 samples per token, pads included
    audio: np.ndarray        # float32 [samples] at 24 kHz, finite: the speech, then `pause` seconds of zeros
    words: tuple[Word, ...] = ()  # each word's tokens (see tilewave.engine.timestamps)
    pause: float = 0.0       # seconds of silence at the end of `audio` ([pause:...]); a pause alone has no phonemes


def check_speed(speed) -> float:
    try:
        value = float(speed)
    except (TypeError, ValueError):
        raise InputError(f"speed must be a number from {SPEED_RANGE[0]} to {SPEED_RANGE[1]}, got {speed!r}") from None
    if not SPEED_RANGE[0] <= value <= SPEED_RANGE[1]:  # also rejects NaN
        raise InputError(f"speed {speed!r} is out of range; use {SPEED_RANGE[0]} (slow) to {SPEED_RANGE[1]} (fast), "
                         "1.0 is the voice's own pace")
    return value


def check_seed(seed) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise InputError(f"seed must be an integer from 0 to 2**63 - 1, got {seed!r}")
    return int(seed)


def resolve_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise InputError(f"unknown device {device!r}; use 'cpu' or 'cuda'") from None
    if dev.type not in ("cpu", "cuda"):
        raise InputError(f"device {device!r} is not supported; use 'cpu' or 'cuda'")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r} was asked for, but torch sees no CUDA device here; use 'cpu'")
    return dev


class Pipeline:
    """English text (or Kokoro phonemes) -> the chunks the model will say, each 1-510 phonemes."""

    def __init__(self, lang: str = "en-us") -> None:
        self.lang = check_language(lang)
        self._phonemizer = None  # the G2P starts on the first text: phoneme input never needs it
        self._lock = threading.Lock()  # one espeak for the callers of every thread

    @property
    def phonemizer(self):
        if self._phonemizer is None:
            self._phonemizer = phonemizer_for(self.lang)
        return self._phonemizer

    def chunks(self, text: str, phonemes: bool = False, first_limit: int | None = None,
               normalize: bool = True) -> list[TextChunk]:
        """The chunks the model will say; InputError when there is nothing to say. `first_limit`: the first
        chunk is only the first sentence or clause, of at most that many phonemes (see chunk_text). `normalize`:
        read numbers, money, dates, abbreviations... as words (tilewave.text.normalize) before the phonemizer."""
        head, rest = self.iter_chunks(text, phonemes, first_limit, normalize)
        return head + list(rest)

    def iter_chunks(self, text: str, phonemes: bool = False, first_limit: int | None = None,
                    normalize: bool = True, check_voice=None,
                    phonemizer_for=None) -> tuple[list[TextChunk], Iterator[TextChunk]]:
        """chunks() as (head, rest): head up to and with the first chunk that has speech, checked (InputError
        when the text has nothing to say); rest an iterator over the others, phonemized as it is read (so a
        stream's first chunk waits for one sentence's phonemes, not the whole text's). `check_voice`,
        `phonemizer_for`: see frontend.iter_text_chunks."""
        return iter_speakable(text, self.phonemize, self.lang, phonemes, first_limit, normalize, check_voice,
                              phonemizer_for)

    def phonemize(self, pieces: list[str]):
        """The pieces' phonemes from this language's phonemizer."""
        with self._lock:  # one espeak for the callers of every thread, taken per call (a stream reads lazily)
            return self.phonemizer(pieces)


class Joiner:
    """The join of consecutive chunks, made as they come: push() returns the samples that are final (all
    but the tail the next chunk crossfades into), finish() the rest. Their concatenation is join_chunks'."""

    def __init__(self, crossfade: int = CROSSFADE_SAMPLES) -> None:
        self.crossfade, self._tail = crossfade, None

    def push(self, audio: np.ndarray) -> np.ndarray:
        a = np.asarray(audio, dtype=np.float32).reshape(-1)
        prev, self._tail = self._tail, a
        if prev is None:
            return np.zeros(0, dtype=np.float32)
        n = min(self.crossfade, prev.size, a.size)
        ramp = ((np.arange(n, dtype=np.float32) + 1) / (n + 1))
        self._tail = a[n:]
        return np.concatenate([prev[:prev.size - n], prev[prev.size - n:] * (1 - ramp) + a[:n] * ramp])

    def finish(self) -> np.ndarray:
        tail, self._tail = self._tail, None
        return np.zeros(0, dtype=np.float32) if tail is None else tail


def join_chunks(audios: list[np.ndarray], crossfade: int = CROSSFADE_SAMPLES) -> np.ndarray:
    """One signal from consecutive chunks, each join a linear crossfade of `crossfade` samples."""
    joiner = Joiner(crossfade)
    pieces = [joiner.push(a) for a in audios]
    return np.concatenate(pieces + [joiner.finish()]).astype(np.float32, copy=False)
