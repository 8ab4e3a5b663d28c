"""The speech request's body (pydantic models) and the limits and choices its fields are checked against
(see app.py's docstring for what each field means)."""
from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

MODELS = ("kokoro", "tts-1", "tts-1-hd")
OPENAI_SPEED = (0.25, 4.0)
# OpenAI's limit on `input`; a 4096-character text is ~4-5 minutes of speech
MAX_INPUT_CHARS = 4096
MAX_VOLUME = 10.0
# the largest request body read: the input at 4 bytes a character, and the other fields
MAX_BODY_BYTES = 64 * 1024
STREAM_FORMATS = ("audio", "sse")
TIMESTAMP_FORMATS = ("json", "srt", "vtt")


def kokoro_speed(openai_speed: float) -> float:
    """OpenAI's speed (0.25-4.0) -> Kokoro's (0.5-2.0): the square root (see app.py's docstring)."""
    return math.sqrt(openai_speed)


class NormalizationOptions(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # Kokoro-FastAPI's finer switches: not used

    normalize: bool = True


class SpeechRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # "instructions" and others OpenAI has: not used

    input: str
    model: str = "kokoro"
    voice: str | None = None
    speed: float = 1.0
    response_format: str = "mp3"
    stream_format: str = "audio"
    seed: int | None = None
    timestamps_format: str = "json"  # the captioned endpoint's: json, srt or vtt
    lang_code: str | None = None  # Kokoro-FastAPI's: the text's language (else the voice's; see app.py's docstring)
    normalization_options: NormalizationOptions | None = None  # Kokoro-FastAPI's: normalize false reads as written
    volume_multiplier: float = 1.0  # Kokoro-FastAPI's: the samples times this (0 to 10), clipped to full scale
