"""What the server offers: GET /v1/models, GET /v1/audio/models (Open WebUI's list) and GET /v1/audio/voices.
They need the API key when one is set."""
from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends

from tilewave.engine.voice_catalog import CATALOG, OPENAI_VOICES
from tilewave.engine.voices import installed_voices
from tilewave.server.deps import authorize
from tilewave.server.schemas import MODELS

router = APIRouter(dependencies=[Depends(authorize)])


@router.get("/v1/models")
async def models():
    return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "tilewave"}
                                       for m in MODELS]}


@router.get("/v1/audio/models")
async def audio_models():  # the list Open WebUI asks a speech server for
    return {"models": [{"id": m, "name": m} for m in MODELS]}


@router.get("/v1/audio/voices")
async def voices():
    here = await asyncio.to_thread(installed_voices)
    listed = [_voice_entry(n, n) for n in here if n in CATALOG]
    listed += [_voice_entry(alias, n) for alias, n in OPENAI_VOICES.items() if n in here]
    return {"voices": listed}


def _voice_entry(id: str, n: str) -> dict:
    """The listing of voice `id`, which is the stock voice `n` (itself, or an OpenAI name for it)."""
    v = CATALOG[n]
    named = n if id == n else f"{id} = {n}"
    return {"id": id, "name": f"{named} ({v.language_name}, {v.gender})", "language": v.language,
            "gender": v.gender}
