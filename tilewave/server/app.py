"""HTTP API over the engine, shaped like OpenAI's speech endpoint.

    POST /v1/audio/speech  {"input": "Hello.", "voice": "jf_alpha", "speed": 1.0}  -> audio/wav (24 kHz);
                           "response_format": "wav" (default), "flac", "mp3", "opus" (Ogg) or "pcm" (16-bit LE)
    GET  /voices                                                                  -> {"voices": [...], "default": ...}

The model is loaded once, when the app is made (bad weights stop the server from starting); requests go
through the engine session's scheduler, which batches the chunks of concurrent requests on one worker. A bad
request is a 400 with the message.
"""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from tilewave.engine import DEFAULT_PRECISION, DEFAULT_VOICE, Session, builtin_voices
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
               precision: str = DEFAULT_PRECISION, session: Session | None = None) -> FastAPI:
    """The app over `session`, or over a new one made from the other arguments."""
    if session is None:
        session = Session(device=device, precision=precision, lang=lang, weights=weights, model=model)
    session.load()  # now: a weights error belongs to startup, not to the first caller
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
        audio, rate = session.speak(req.input, voice=req.voice, speed=req.speed, seed=req.seed)
        return Response(encode_audio(audio, rate, fmt, subtype), media_type=media)

    return app
