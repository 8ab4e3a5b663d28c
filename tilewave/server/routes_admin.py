"""The routes open without the API key, for probes and scrapers: GET /health and GET /metrics."""
from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from tilewave.server.deps import MetricsDep, ReadinessDep

router = APIRouter()


@router.get("/health")
async def health(readiness: ReadinessDep):
    if readiness.ready:
        return {"status": "ok"}
    status = "failed" if readiness.error else "loading"
    return JSONResponse({"status": status, **({"error": str(readiness.error)} if readiness.error else {})},
                        status_code=503)


@router.get("/metrics")
async def prometheus(metrics: MetricsDep):
    body, media = await asyncio.to_thread(metrics.scrape)
    return Response(body, media_type=media)
