"""The speech routes: POST /v1/audio/speech (streamed audio or SSE events) and POST /v1/audio/speech/captioned
(the whole file and its word timings in one JSON reply). Both need the API key when one is set."""
from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import asdict, dataclass

import numpy as np
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse

from tilewave.engine import SAMPLE_RATE, Cancelled, join_chunks
from tilewave.engine.timestamps import format_timestamps, word_timestamps
from tilewave.errors import TilewaveError
from tilewave.server.deps import ConfigDep, MetricsDep, ReadinessDep, SessionDep, authorize
from tilewave.server.encoding import MEDIA_TYPES, EagerJoiner, encoder
from tilewave.server.errors import OpenAIError
from tilewave.server.metrics import Metrics
from tilewave.server.speech_request import submit_speech

log = logging.getLogger("tilewave.server")

router = APIRouter(dependencies=[Depends(authorize)])


@dataclass
class _Speech:
    """What one speech request made, for the hooks and the metrics."""
    arrived: float
    samples: int = 0
    first_audio: float | None = None


@router.post("/v1/audio/speech")
async def speech(request: Request, session: SessionDep, metrics: MetricsDep, config: ConfigDep,
                 readiness: ReadinessDep):
    arrived = time.perf_counter()
    req, job = await submit_speech(request, session, config, readiness, config.first_chunk_phonemes)
    sse = req.stream_format == "sse"
    body = _stream(job, req.response_format, sse, _Speech(arrived), metrics, config.on_first_audio,
                   req.volume_multiplier)
    media = "text/event-stream" if sse else MEDIA_TYPES[req.response_format]
    return StreamingResponse(body, media_type=media, headers={"Cache-Control": "no-store"})


@router.post("/v1/audio/speech/captioned")
async def captioned(request: Request, session: SessionDep, config: ConfigDep, readiness: ReadinessDep):
    req, job = await submit_speech(request, session, config, readiness, None, captioned=True)
    try:
        chunks = [chunk async for chunk in job]
    except TilewaveError as exc:
        raise OpenAIError(500, str(exc), type="server_error") from None
    finally:
        job.cancel()  # a client gone before the end frees its place
    words = word_timestamps(chunks)
    data = _encode_whole(join_chunks([c.audio for c in chunks]), req.response_format, req.volume_multiplier)
    reply = {"audio": base64.b64encode(data).decode("ascii"), "response_format": req.response_format,
             "words": [asdict(w) for w in words]}
    if req.timestamps_format != "json":
        reply["captions"] = format_timestamps(words, "." + req.timestamps_format)
    return JSONResponse(reply)


def _encode_whole(audio, fmt: str, volume: float) -> bytes:
    """The whole file of `audio` in format `fmt`."""
    enc = encoder(fmt, SAMPLE_RATE)
    try:
        return enc.encode(_louder(audio, volume)) + enc.finish()
    finally:
        enc.close()


def _louder(audio, volume: float):
    """The samples times `volume`, clipped to full scale (1.0: as they are)."""
    return audio if volume == 1.0 else np.clip(audio * np.float32(volume), -1.0, 1.0)


def _event(event: dict) -> bytes:
    """One server-sent event."""
    return f"data: {json.dumps(event)}\n\n".encode()


def _frame(data: bytes, sse: bool) -> bytes:
    """Encoded audio as the response sends it: as it is, or in a delta event."""
    if not sse:
        return data
    return _event({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode("ascii")})


def _done_event(job, samples: int) -> bytes:
    """The SSE stream's last event, with its usage (input tokens: phonemes; output tokens: 25 ms frames)."""
    frames = samples // 600
    phonemes = sum(len(j.phonemes) for j in job.jobs)  # all known now: a stream's rest joins as it is read
    usage = {"input_tokens": phonemes, "output_tokens": frames, "total_tokens": phonemes + frames}
    return _event({"type": "speech.audio.done", "usage": usage})


def _error_event(exc: TilewaveError) -> bytes:
    return _event({"type": "error", "error": {"message": str(exc), "type": "server_error", "param": None,
                                              "code": "cancelled" if isinstance(exc, Cancelled) else None}})


def _first_audio_sent(speech: _Speech, metrics: Metrics, on_first_audio) -> None:
    speech.first_audio = time.perf_counter()
    metrics.first_audio.observe(speech.first_audio - speech.arrived)
    if on_first_audio is not None:
        on_first_audio(speech)


async def _stream(job, fmt: str, sse: bool, speech: _Speech, metrics: Metrics, on_first_audio, volume: float = 1.0):
    """The response body: each chunk's final samples encoded and sent as soon as the chunk is made."""
    joiner, enc = EagerJoiner(), encoder(fmt, SAMPLE_RATE)
    try:
        async for chunk in job:
            samples = joiner.push(_louder(chunk.audio, volume))
            speech.samples += samples.size
            data = enc.encode(samples)
            if data:
                yield _frame(data, sse)
                if speech.first_audio is None:  # the bytes were sent: the response resumes after each send
                    _first_audio_sent(speech, metrics, on_first_audio)
        tail = joiner.finish()
        speech.samples += tail.size
        data = enc.encode(tail) + enc.finish()
        if data:
            yield _frame(data, sse)
        if speech.samples:
            metrics.real_time_factor.observe((time.perf_counter() - speech.arrived) * SAMPLE_RATE / speech.samples)
        if sse:
            yield _done_event(job, speech.samples)
    except TilewaveError as exc:  # the status line is sent: the error can only end the stream
        log.warning("a speech stream ended early: %s", exc)
        if not sse:
            raise  # the connection is dropped without chunked encoding's last chunk: the client sees it cut
        yield _error_event(exc)
    finally:
        job.cancel()  # a client gone mid-stream frees its place (a no-op once the request is finished)
        enc.close()
