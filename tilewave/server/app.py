"""HTTP API over the engine, shaped like OpenAI's speech endpoint.

    POST /v1/audio/speech  {"input": "Hello.", "voice": "jf_alpha", "speed": 1.0}  -> audio/wav (24 kHz);
                           "response_format": "wav" (default), "flac", "mp3", "opus" (Ogg) or "pcm" (16-bit LE)
    GET  /voices                                                                  -> {"voices": [...], "default": ...}

The model is loaded once, when the app is made (bad weights stop the server from starting); requests are served one at a time on it (one model
call already uses every core of a CPU, and the whole GPU). A bad request is a 400 with the message.
"""
from __future__ import annotations

import threading

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from tilewave.engine.pipeline import DEFAULT_PRECISION, SAMPLE_RATE, Pipeline, join_chunks
from tilewave.engine.voices import DEFAULT_VOICE, builtin_voices
from tilewave.engine.wav import encode_audio
from tilewave.errors import InputError, TilewaveError


# OpenAI's response_format names -> (soundfile format, subtype, media type); "pcm" is raw samples
RESPONSE_FORMATS = {"wav": ("WAV", "PCM_16", "audio/wav"), "flac": ("FLAC", "PCM_16", "audio/flac"),
                    "mp3": ("MP3", "MPEG_LAYER_III", "audio/mpeg"), "opus": ("OGG", "OPUS", "audio/ogg"),
                    "pcm": ("RAW", "PCM_16", "audio/pcm")}


class SpeechRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")  # OpenAI clients also send "model"

    input: str
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    response_format: str = "wav"
    seed: int | None = None


def create_app(lang: str = "en-us", device: str | None = None, weights: str | None = None, model=None,
               precision: str = DEFAULT_PRECISION) -> FastAPI:
    pipeline = Pipeline(lang=lang, voice=DEFAULT_VOICE, device=device, model=model, weights=weights,
                        precision=precision)
    pipeline.model  # load now: a weights error belongs to startup, not to the first caller
    lock = threading.Lock()
    app = FastAPI(title="tilewave", description="Kokoro-82M text to speech on Triton kernels")

    @app.exception_handler(InputError)
    def bad_input(request, exc: InputError):
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(TilewaveError)
    def server_side(request, exc: TilewaveError):
        return JSONResponse({"error": str(exc)}, status_code=500)

    @app.get("/voices")
    def voices() -> dict:
        return {"voices": builtin_voices(), "default": DEFAULT_VOICE}

    @app.post("/v1/audio/speech")
    def speech(req: SpeechRequest) -> Response:
        if req.response_format not in RESPONSE_FORMATS:
            raise InputError(f"response_format {req.response_format!r} is not served; ask for one of "
                             f"{', '.join(repr(f) for f in RESPONSE_FORMATS)}")
        fmt, subtype, media = RESPONSE_FORMATS[req.response_format]
        with lock:
            chunks = list(pipeline(req.input, speed=req.speed, seed=req.seed, voice=req.voice))
        return Response(encode_audio(join_chunks([c.audio for c in chunks]), SAMPLE_RATE, fmt, subtype),
                        media_type=media)

    return app
