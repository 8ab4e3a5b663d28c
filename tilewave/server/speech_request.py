"""Reading a speech request: its JSON body (size-limited), its fields checked, its voice and language resolved,
and its submission to the session's scheduler."""
from __future__ import annotations

import asyncio
import json

from fastapi import Request
from pydantic import ValidationError

from tilewave.engine import Cancelled, QueueFull, Session
from tilewave.errors import InputError
from tilewave.server.deps import RETRY_AFTER_S, Readiness, ServerConfig
from tilewave.server.encoding import MEDIA_TYPES
from tilewave.server.errors import OpenAIError, validation_error
from tilewave.server.schemas import (MAX_VOLUME, MODELS, OPENAI_SPEED, STREAM_FORMATS, TIMESTAMP_FORMATS,
                                     SpeechRequest, kokoro_speed)
from tilewave.text import check_language


async def submit_speech(request: Request, session: Session, config: ServerConfig, readiness: Readiness,
                        first_limit: int | None, captioned: bool = False):
    """The checked request and its scheduler Request (503 when the queue is full)."""
    req = _speech_request(await _json_body(request, config.max_body_bytes))
    _check(req, config.max_input_chars)
    if captioned and req.timestamps_format not in TIMESTAMP_FORMATS:
        raise OpenAIError(400, f"'timestamps_format' {req.timestamps_format!r} is not served; use one of "
                          f"{', '.join(TIMESTAMP_FORMATS)}", param="timestamps_format", code="invalid_value")
    readiness.require()
    voice = await _voice(req.voice, session.voices.named)
    lang = _language(req)
    try:
        normalize = None if req.normalization_options is None else req.normalization_options.normalize
        return req, await asyncio.to_thread(session.submit, req.input, voice, kokoro_speed(req.speed), req.seed,
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
        raise validation_error(exc.errors()) from None


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
    """The request's language, `lang_code` (checked); None leaves it to the session: the language of the stock
    voices it names, else the session's (engine.voice_bank)."""
    if req.lang_code is not None:
        try:
            return check_language(req.lang_code)
        except InputError as exc:
            raise OpenAIError(400, str(exc), param="lang_code", code="invalid_value") from None
    return None


async def _voice(spec: str | None, resolve):
    """The Voice of a spec; names and blends only (VoiceBank.named opens no file a request names, so its error says
    nothing of the file system)."""
    if spec is None:
        return None  # the session's default voice
    try:
        return await asyncio.to_thread(resolve, spec)
    except InputError as exc:
        raise OpenAIError(400, str(exc), param="voice", code="invalid_voice") from None
