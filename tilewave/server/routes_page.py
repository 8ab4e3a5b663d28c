"""The page at /: a form that speaks through /v1/audio/speech. Open without the API key (the page sends the key
it is given)."""
from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

PAGE = Path(__file__).parent / "page"

router = APIRouter()


@router.get("/")
async def page():
    return FileResponse(PAGE / "index.html", media_type="text/html")
