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
"""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import hmac
import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from tilewave.engine import SAMPLE_RATE, Cancelled, QueueFull, Session, join_chunks
from tilewave.engine.session import FIRST_CHUNK_PHONEMES
from tilewave.engine.timestamps import format_timestamps, word_timestamps
from tilewave.engine.voice_catalog import CATALOG, OPENAI_VOICES, voice_language
from tilewave.engine.voices import installed_voices
from tilewave.errors import InputError, TilewaveError
from tilewave.server.encoding import MEDIA_TYPES, EagerJoiner, encoder
from tilewave.server.metrics import Metrics
from tilewave.text import check_language

log = logging.getLogger("tilewave.server")

MODELS = ("kokoro", "tts-1", "tts-1-hd")
OPENAI_SPEED = (0.25, 4.0)
# OpenAI's limit on `input`; a 4096-character text is ~4-5 minutes of speech
MAX_INPUT_CHARS = 4096
MAX_VOLUME = 10.0
# the largest request body read: the input at 4 bytes a character, and the other fields
MAX_BODY_BYTES = 64 * 1024
RETRY_AFTER_S = 1
STREAM_FORMATS = ("audio", "sse")
TIMESTAMP_FORMATS = ("json", "srt", "vtt")
PAGE = Path(__file__).parent / "page"


def kokoro_speed(openai_speed: float) -> float:
    """OpenAI's speed (0.25-4.0) -> Kokoro's (0.5-2.0): the square root (see the module doc)."""
    return math.sqrt(openai_speed)


class OpenAIError(Exception):
    """A failure to answer in OpenAI's error shape."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 type: str = "invalid_request_error", headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type
        self.headers = headers

    def response(self) -> JSONResponse:
        body = {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}
        return JSONResponse(body, status_code=self.status, headers=self.headers)


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
    lang_code: str | None = None  # Kokoro-FastAPI's: the text's language (else the voice's; see the module doc)
    normalization_options: NormalizationOptions | None = None  # Kokoro-FastAPI's: normalize false reads as written
    volume_multiplier: float = 1.0  # Kokoro-FastAPI's: the samples times this (0 to 10), clipped to full scale


@dataclass
class _Speech:
    """What one speech request made, for the hooks and the metrics."""
    arrived: float
    samples: int = 0
    first_audio: float | None = None


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
    state = {"ready": False, "error": None}
    metrics = Metrics(session, lambda: state["ready"])

    async def load() -> None:
        try:
            await asyncio.to_thread(session.load)
            if warm_up or (warm_up is None and session.device.type == "cuda"):
                await asyncio.to_thread(session.warm_up_serving)
                metrics.skip_batches()
            state["ready"] = True
        except Exception as exc:  # any failure to load is the server's; it is reported, not raised into uvicorn
            state["error"] = exc
            log.error("the model could not be loaded: %s", exc)
            if on_load_error is not None:
                on_load_error(exc)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        # each streaming response waits for its chunks on a thread (Request's async iteration); the default
        # pool (cpu count + 4 threads) would make the max_requests-th stream wait for a free thread
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(session.max_requests + 16,
                                                                        thread_name_prefix="tilewave-http"))
        loader = asyncio.create_task(load())
        try:
            yield
        finally:
            loader.cancel()
            session.close()  # requests still streaming end now (their clients get a truncated stream)

    app = FastAPI(title="tilewave", description="Kokoro-82M text to speech on Triton kernels, OpenAI's speech API",
                  lifespan=lifespan)
    app.state.session, app.state.metrics = session, metrics

    # -- errors, all in OpenAI's shape ------------------------------------------------------------------
    @app.exception_handler(OpenAIError)
    async def openai_error(request, exc: OpenAIError):
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(request, exc: RequestValidationError):
        return _validation_error(exc.errors()).response()

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        return OpenAIError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}", code=code,
                           headers=getattr(exc, "headers", None)).response()

    @app.exception_handler(Exception)
    async def server_error(request, exc: Exception):
        log.exception("unexpected failure on %s", request.url.path)
        return OpenAIError(500, f"the server failed: {type(exc).__name__}: {exc}", type="server_error").response()

    app.add_middleware(_CountRequests, metrics=metrics)

    def authorize(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), api_key.encode()):
            raise OpenAIError(401, "missing or wrong API key: send the header 'Authorization: Bearer <key>' with "
                              "the key the server was started with", code="invalid_api_key",
                              headers={"WWW-Authenticate": "Bearer"})

    def ready() -> None:
        if not state["ready"]:
            what = f"failed to load its model ({state['error']})" if state["error"] else "is still loading its model"
            raise OpenAIError(503, f"the server {what}; try again shortly", code="not_ready", type="server_error",
                              headers={"Retry-After": str(RETRY_AFTER_S)})

    # -- endpoints --------------------------------------------------------------------------------------
    @app.get("/health")
    async def health():
        if state["ready"]:
            return {"status": "ok"}
        status = "failed" if state["error"] else "loading"
        return JSONResponse({"status": status, **({"error": str(state["error"])} if state["error"] else {})},
                            status_code=503)

    @app.get("/metrics")
    async def prometheus():
        body, media = await asyncio.to_thread(metrics.scrape)
        return Response(body, media_type=media)

    @app.get("/v1/models")
    async def models(request: Request):
        authorize(request)
        return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "tilewave"}
                                           for m in MODELS]}

    @app.get("/v1/audio/models")
    async def audio_models(request: Request):  # the list Open WebUI asks a speech server for
        authorize(request)
        return {"models": [{"id": m, "name": m} for m in MODELS]}

    @app.get("/v1/audio/voices")
    async def voices(request: Request):
        authorize(request)
        here = await asyncio.to_thread(installed_voices)
        def entry(id: str, n: str) -> dict:
            v = CATALOG[n]
            named = n if id == n else f"{id} = {n}"
            return {"id": id, "name": f"{named} ({v.language_name}, {v.gender})", "language": v.language,
                    "gender": v.gender}

        listed = [entry(n, n) for n in here if n in CATALOG]
        listed += [entry(alias, n) for alias, n in OPENAI_VOICES.items() if n in here]
        return {"voices": listed}

    async def submit(request: Request, first_limit: int | None, captioned: bool = False):
        """The checked request and its scheduler Request (503 when the queue is full)."""
        authorize(request)
        req = _speech_request(await _json_body(request, max_body_bytes))
        _check(req, max_input_chars)
        if captioned and req.timestamps_format not in TIMESTAMP_FORMATS:
            raise OpenAIError(400, f"'timestamps_format' {req.timestamps_format!r} is not served; use one of "
                              f"{', '.join(TIMESTAMP_FORMATS)}", param="timestamps_format", code="invalid_value")
        ready()
        pack = await _voice_pack(req.voice, session.named_voice)
        lang = _language(req)
        try:
            normalize = None if req.normalization_options is None else req.normalization_options.normalize
            return req, await asyncio.to_thread(session.submit, req.input, pack, kokoro_speed(req.speed), req.seed,
                                                first_limit=first_limit, block=False, lang=lang,  # full: 503
                                                normalize=normalize)
        except QueueFull:
            raise OpenAIError(503, f"the server is busy: it already holds {session.max_requests} requests; retry "
                              f"after {RETRY_AFTER_S} s", code="queue_full", type="server_error",
                              headers={"Retry-After": str(RETRY_AFTER_S)}) from None
        except Cancelled:
            raise OpenAIError(503, "the server is shutting down", code="shutting_down", type="server_error") from None
        except InputError as exc:
            raise OpenAIError(400, str(exc), param="input", code="invalid_input") from None

    @app.post("/v1/audio/speech")
    async def speech(request: Request):
        arrived = time.perf_counter()
        req, job = await submit(request, first_chunk_phonemes)
        sse = req.stream_format == "sse"
        body = _stream(job, req.response_format, sse, _Speech(arrived), metrics, on_first_audio, req.volume_multiplier)
        media = "text/event-stream" if sse else MEDIA_TYPES[req.response_format]
        return StreamingResponse(body, media_type=media, headers={"Cache-Control": "no-store"})

    @app.post("/v1/audio/speech/captioned")
    async def captioned(request: Request):
        req, job = await submit(request, None, captioned=True)
        try:
            chunks = [chunk async for chunk in job]
        except TilewaveError as exc:
            raise OpenAIError(500, str(exc), type="server_error") from None
        finally:
            job.cancel()  # a client gone before the end frees its place
        words = word_timestamps(chunks)
        enc = encoder(req.response_format, SAMPLE_RATE)
        try:
            data = enc.encode(_louder(join_chunks([c.audio for c in chunks]), req.volume_multiplier)) + enc.finish()
        finally:
            enc.close()
        reply = {"audio": base64.b64encode(data).decode("ascii"), "response_format": req.response_format,
                 "words": [asdict(w) for w in words]}
        if req.timestamps_format != "json":
            reply["captions"] = format_timestamps(words, "." + req.timestamps_format)
        return JSONResponse(reply)

    @app.get("/")
    async def page():
        return FileResponse(PAGE / "index.html", media_type="text/html")

    return app


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


# -- reading a speech request ---------------------------------------------------------------------------
async def _json_body(request: Request, limit: int) -> dict:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise OpenAIError(415, f"the body must be JSON with 'Content-Type: application/json', got "
                          f"{kind or 'no content type'!r}", code="unsupported_media_type")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            raise _too_large(limit)
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OpenAIError(400, f"the body is not valid JSON ({exc}); send a JSON object like "
                          '{"model": "tts-1", "input": "Hello.", "voice": "alloy"}', code="invalid_json") from None
    if not isinstance(value, dict):
        raise OpenAIError(400, f"the body must be a JSON object, got {type(value).__name__}", code="invalid_json")
    return value


def _too_large(limit: int) -> OpenAIError:
    return OpenAIError(413, f"the request body is larger than {limit} bytes; split the input into several requests",
                       code="request_too_large")


def _speech_request(body: dict) -> SpeechRequest:
    try:
        return SpeechRequest.model_validate(body)
    except ValidationError as exc:
        raise _validation_error(exc.errors()) from None


def _validation_error(errors) -> OpenAIError:
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    param = ".".join(loc) or None
    what = "is missing" if first.get("type") == "missing" else f"is invalid: {first.get('msg')}"
    return OpenAIError(400, f"'{param}' {what}" if param else str(first.get("msg")), param=param,
                       code="missing_required_parameter" if first.get("type") == "missing" else "invalid_value")


def _check(req: SpeechRequest, max_input_chars: int) -> None:
    if req.model not in MODELS:
        raise OpenAIError(404, f"the model {req.model!r} does not exist here; use one of {', '.join(MODELS)}",
                          param="model", code="model_not_found")
    if not req.input.strip():
        raise OpenAIError(400, "'input' is empty; give some words to say", param="input", code="empty_input")
    if len(req.input) > max_input_chars:
        raise OpenAIError(400, f"'input' is {len(req.input)} characters, more than the {max_input_chars} a request "
                          "may have; split the text into several requests", param="input",
                          code="string_above_max_length")
    if not 0 <= req.volume_multiplier <= MAX_VOLUME:  # also refuses NaN
        raise OpenAIError(400, f"'volume_multiplier' {req.volume_multiplier!r} is out of range; use 0 to {MAX_VOLUME:g}",
                          param="volume_multiplier", code="invalid_value")
    if not OPENAI_SPEED[0] <= req.speed <= OPENAI_SPEED[1]:  # also refuses NaN
        raise OpenAIError(400, f"'speed' {req.speed!r} is out of range; use {OPENAI_SPEED[0]} to {OPENAI_SPEED[1]} "
                          "(1.0: the voice's own pace)", param="speed", code="invalid_value")
    if req.response_format not in MEDIA_TYPES:
        raise OpenAIError(400, f"'response_format' {req.response_format!r} is not served; use one of "
                          f"{', '.join(MEDIA_TYPES)}", param="response_format", code="invalid_value")
    if req.stream_format not in STREAM_FORMATS:
        raise OpenAIError(400, f"'stream_format' {req.stream_format!r} is not served; use 'audio' or 'sse'",
                          param="stream_format", code="invalid_value")
    if req.seed is not None and not 0 <= req.seed < 2**63:
        raise OpenAIError(400, f"'seed' {req.seed} is out of range; use 0 to 2**63 - 1", param="seed",
                          code="invalid_value")


def _language(req: SpeechRequest) -> str | None:
    """The request's language: `lang_code` (checked), else the language of the stock voices it names, else None
    (the session's: an OpenAI voice name, a blend across languages, no voice)."""
    if req.lang_code is not None:
        try:
            return check_language(req.lang_code)
        except InputError as exc:
            raise OpenAIError(400, str(exc), param="lang_code", code="invalid_value") from None
    return None if req.voice is None else voice_language(req.voice, allow_paths=False)


async def _voice_pack(spec: str | None, pack_of):
    """The pack for a voice spec; names and blends only (Session.named_voice opens no file a request names, so its
    error says nothing of the file system)."""
    if spec is None:
        return None  # the session's default voice
    try:
        return await asyncio.to_thread(pack_of, spec)
    except InputError as exc:
        raise OpenAIError(400, str(exc), param="voice", code="invalid_voice") from None


# -- the response ----------------------------------------------------------------------------------------
def _louder(audio, volume: float):
    """The samples times `volume`, clipped to full scale (1.0: as they are)."""
    return audio if volume == 1.0 else np.clip(audio * np.float32(volume), -1.0, 1.0)


async def _stream(job, fmt: str, sse: bool, speech: _Speech, metrics: Metrics, on_first_audio, volume: float = 1.0):
    """The response body: each chunk's final samples encoded and sent as soon as the chunk is made."""
    joiner, enc = EagerJoiner(), encoder(fmt, SAMPLE_RATE)

    def frame(data: bytes) -> bytes:
        if not sse:
            return data
        event = {"type": "speech.audio.delta", "audio": base64.b64encode(data).decode("ascii")}
        return f"data: {json.dumps(event)}\n\n".encode()

    try:
        async for chunk in job:
            samples = joiner.push(_louder(chunk.audio, volume))
            speech.samples += samples.size
            data = enc.encode(samples)
            if data:
                yield frame(data)
                if speech.first_audio is None:  # the bytes were sent: the response resumes after each send
                    speech.first_audio = time.perf_counter()
                    metrics.first_audio.observe(speech.first_audio - speech.arrived)
                    if on_first_audio is not None:
                        on_first_audio(speech)
        tail = joiner.finish()
        speech.samples += tail.size
        data = enc.encode(tail) + enc.finish()
        if data:
            yield frame(data)
        if speech.samples:
            metrics.real_time_factor.observe((time.perf_counter() - speech.arrived) * SAMPLE_RATE / speech.samples)
        if sse:
            frames = speech.samples // 600
            phonemes = sum(len(j.phonemes) for j in job.jobs)  # all known now: a stream's rest joins as it is read
            usage = {"input_tokens": phonemes, "output_tokens": frames, "total_tokens": phonemes + frames}
            yield f"data: {json.dumps({'type': 'speech.audio.done', 'usage': usage})}\n\n".encode()
    except TilewaveError as exc:  # the status line is sent: the error can only end the stream
        log.warning("a speech stream ended early: %s", exc)
        if not sse:
            raise  # the connection is dropped without chunked encoding's last chunk: the client sees it cut
        error = {"type": "error", "error": {"message": str(exc), "type": "server_error", "param": None,
                                            "code": "cancelled" if isinstance(exc, Cancelled) else None}}
        yield f"data: {json.dumps(error)}\n\n".encode()
    finally:
        job.cancel()  # a client gone mid-stream frees its place (a no-op once the request is finished)
        enc.close()
