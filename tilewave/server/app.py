"""HTTP API over the engine, shaped like OpenAI's speech API so that its clients (the `openai` package, Open
WebUI, ...) can point at it.

    POST /v1/audio/speech  {"model": "tts-1", "input": "Hello.", "voice": "af_heart", "speed": 1.0,
                            "response_format": "mp3", "stream_format": "audio"}          -> audio, streamed
    GET  /v1/models                  the model names accepted: kokoro, tts-1, tts-1-hd (all the same Kokoro-82M)
    GET  /v1/audio/models            the same as {"models": [{"id", "name"}]} (what Open WebUI reads)
    GET  /v1/audio/voices            {"voices": [{"id", "name", "language", "gender"}]}: the installed stock voices
                                     and OpenAI's voice names (alloy, echo, ...) that stand for them
    GET  /health                     200 {"status": "ok"} once the model is loaded; 503 before (or if it failed)
    GET  /metrics                    Prometheus' text format (see metrics.py)
    POST /v1/audio/speech/captioned  the speech body and `timestamps_format` (json, srt or vtt) -> {"audio": base64 of
                                     the whole file, "response_format", "words": [{word, start, end}], "captions":
                                     the SRT/VTT text (with those formats)}: not streamed

`voice`: a stock voice, an OpenAI name, or a blend (`a+b`, `a(2)+b(1)`, `a:0.7,b:0.3`); never a path: no
file is opened on a request's say-so. `speed`: OpenAI's 0.25-4.0, mapped onto Kokoro's 0.5-2.0 (the range
in which its duration predictor still sounds natural) by the square root, so 1.0 stays the voice's own pace,
OpenAI's ends map onto Kokoro's, and each step of OpenAI's scale is half as large a step here
(OpenAI 2.0 -> Kokoro 1.41). `seed` (not OpenAI's): repeatable audio. `lang_code` (Kokoro-FastAPI's): the text's
language (`es`, `e`, `pt-br` ...); without it, the language of the stock voice named (`ef_dora` reads Spanish), and
for an OpenAI voice name, a blend across languages or no voice, the server's (`tilewave serve --lang`). Also
Kokoro-FastAPI's `normalization_options` ({"normalize": false}: the text as written) and `volume_multiplier` (0-10,
clipped to full scale).

Every response streams (chunked): its first bytes leave as soon as the text's first chunk (its first
sentence or clause) is made; see encoding.py for how each format streams. `stream_format: "sse"` sends
`data: {"type": "speech.audio.delta", "audio": <base64 of the format's bytes>}` events, then
`{"type": "speech.audio.done", "usage": {...}}` (input tokens: phonemes; output tokens: 25 ms frames).

Requests go through the session's scheduler, which batches the chunks of concurrent requests; when it holds
`max_requests` the answer is 503 with Retry-After. A client that disconnects cancels its request (its
chunks not yet made are dropped). Every error is OpenAI's shape: {"error": {"message", "type", "param",
"code"}}. With an API key set, /v1/* asks for it; /health, /metrics and the page at / do not (probes and
scrapers; the page sends the key it is given).

This module builds the app (create_app: its state, startup, error handlers, middleware and routers). The routes
are in routes_speech.py, routes_catalog.py (models, voices), routes_admin.py (/health, /metrics) and
routes_page.py; what they share, through FastAPI's Depends, in deps.py; the request body in schemas.py, how it is
read and checked in speech_request.py, and the error shape in errors.py.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging

from fastapi import FastAPI

from tilewave.engine import Session
from tilewave.engine.session import FIRST_CHUNK_PHONEMES
from tilewave.server import routes_admin, routes_catalog, routes_page, routes_speech
from tilewave.server.deps import Readiness, ServerConfig
from tilewave.server.errors import OpenAIError, install_error_handlers
from tilewave.server.metrics import Metrics
from tilewave.server.schemas import MAX_BODY_BYTES, MAX_INPUT_CHARS, SpeechRequest, kokoro_speed

__all__ = ["MAX_BODY_BYTES", "MAX_INPUT_CHARS", "OpenAIError", "SpeechRequest", "create_app", "kokoro_speed"]

log = logging.getLogger("tilewave.server")


def create_app(session: Session | None = None, *, api_key: str | None = None, max_input_chars: int = MAX_INPUT_CHARS,
               max_body_bytes: int = MAX_BODY_BYTES, on_first_audio=None, on_load_error=None,
               warm_up: bool | None = None, first_chunk_phonemes: int = FIRST_CHUNK_PHONEMES,
               **session_args) -> FastAPI:
    """The app over `session` (or a new Session(**session_args)). The model is loaded when the app starts
    (uvicorn's startup), on a thread, so /health answers 503 meanwhile; `on_load_error(exc)` is called if it
    fails (the CLI stops the server). `warm_up`: run Session.warm_up_serving before /health says ready (None:
    on a GPU, where the first launches compile kernels; a CPU compiles nothing). `api_key`: when set, /v1/* needs `Authorization: Bearer <api_key>`.
    `on_first_audio(speech)`: called when a speech response's first audio bytes have been sent.
    `first_chunk_phonemes`: a speech stream's first chunk at most this many phonemes (Session.stream's first_limit)."""
    if session is None:
        session = Session(**session_args)
    readiness = Readiness()
    metrics = Metrics(session, lambda: readiness.ready)
    app = FastAPI(title="tilewave", description="Kokoro-82M text to speech on Triton kernels, OpenAI's speech API",
                  lifespan=_lifespan)
    # the routes reach these through tilewave.server.deps
    app.state.session, app.state.metrics, app.state.readiness = session, metrics, readiness
    app.state.config = ServerConfig(api_key=api_key, max_input_chars=max_input_chars, max_body_bytes=max_body_bytes,
                                    first_chunk_phonemes=first_chunk_phonemes, on_first_audio=on_first_audio,
                                    on_load_error=on_load_error, warm_up=warm_up)
    install_error_handlers(app)
    app.add_middleware(_CountRequests, metrics=metrics)
    # in the order the OpenAPI schema lists them
    for routes in (routes_admin, routes_catalog, routes_speech, routes_page):
        app.include_router(routes.router)
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI):
    session = app.state.session
    # each streaming response waits for its chunks on a thread (Request's async iteration); the default
    # pool (cpu count + 4 threads) would make the max_requests-th stream wait for a free thread
    loop = asyncio.get_running_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(session.max_requests + 16,
                                                                    thread_name_prefix="tilewave-http"))
    loader = asyncio.create_task(_load(session, app.state.metrics, app.state.readiness, app.state.config))
    try:
        yield
    finally:
        loader.cancel()
        session.close()  # requests still streaming end now (their clients get a truncated stream)


async def _load(session: Session, metrics: Metrics, readiness: Readiness, config: ServerConfig) -> None:
    """Load the model (and warm it up, see create_app), then mark the app ready; or record why it failed."""
    warm_up = config.warm_up
    try:
        await asyncio.to_thread(session.load)
        if warm_up or (warm_up is None and session.device.type == "cuda"):
            await asyncio.to_thread(session.warm_up_serving)
            metrics.skip_batches()
        readiness.ready = True
    except Exception as exc:  # any failure to load is the server's; it is reported, not raised into uvicorn
        readiness.error = exc
        log.error("the model could not be loaded: %s", exc)
        if config.on_load_error is not None:
            config.on_load_error(exc)


class _CountRequests:
    """Counts each HTTP request by route and status, as the status line is sent (plain ASGI: a streamed body
    passes through untouched, errors included)."""

    def __init__(self, app, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def counted(message):
            if message["type"] == "http.response.start":
                route = scope.get("route")
                endpoint = route.path if route is not None else "other"
                self.metrics.requests.labels(endpoint, str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, counted)
