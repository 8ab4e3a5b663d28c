"""What the routes share, kept on the app's state by create_app and handed to them through FastAPI's Depends:
the session, the metrics, the settings create_app was given and whether the model is loaded; and the checks
made before a request is served (the API key, readiness)."""
from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated, Callable

from fastapi import Depends, Request

from tilewave.engine import Session
from tilewave.server.errors import OpenAIError
from tilewave.server.metrics import Metrics

RETRY_AFTER_S = 1


@dataclass(frozen=True)
class ServerConfig:
    """create_app's settings (see its docstring)."""
    api_key: str | None
    max_input_chars: int
    max_body_bytes: int
    first_chunk_phonemes: int
    on_first_audio: Callable | None = None
    on_load_error: Callable | None = None
    warm_up: bool | None = None


@dataclass
class Readiness:
    """Whether the model is loaded (set once by the app's startup), or why it failed to."""
    ready: bool = False
    error: Exception | None = None

    def require(self) -> None:
        """503 with Retry-After until the model is loaded."""
        if not self.ready:
            what = f"failed to load its model ({self.error})" if self.error else "is still loading its model"
            raise OpenAIError(503, f"the server {what}; try again shortly", code="not_ready", type="server_error",
                              headers={"Retry-After": str(RETRY_AFTER_S)})


# async, so that FastAPI calls them on the event loop rather than on a worker thread
async def get_session(request: Request) -> Session:
    return request.app.state.session


async def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


async def get_config(request: Request) -> ServerConfig:
    return request.app.state.config


async def get_readiness(request: Request) -> Readiness:
    return request.app.state.readiness


SessionDep = Annotated[Session, Depends(get_session)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ConfigDep = Annotated[ServerConfig, Depends(get_config)]
ReadinessDep = Annotated[Readiness, Depends(get_readiness)]


async def authorize(request: Request, config: ConfigDep) -> None:
    """With an API key set, 401 unless the request sends `Authorization: Bearer <key>`."""
    if config.api_key is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), config.api_key.encode()):
        raise OpenAIError(401, "missing or wrong API key: send the header 'Authorization: Bearer <key>' with "
                          "the key the server was started with", code="invalid_api_key",
                          headers={"WWW-Authenticate": "Bearer"})
