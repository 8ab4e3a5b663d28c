"""HTTP API over the engine, shaped like OpenAI's speech endpoint.

    POST /v1/audio/speech  {"input": "Hello.", "voice": "jf_alpha", "speed": 1.0}  -> audio/wav (24 kHz)
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
from tilewave.engine.wav import wav_bytes
from tilewave.errors import InputError, TilewaveError


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
        if req.response_format != "wav":
            raise InputError(f"response_format {req.response_format!r} is not served; ask for 'wav'")
        with lock:
            chunks = list(pipeline(req.input, speed=req.speed, seed=req.seed, voice=req.voice))
        return Response(wav_bytes(join_chunks([c.audio for c in chunks]), SAMPLE_RATE), media_type="audio/wav")

    return app
