"""tilewave.server.local.serve: the real server the benchmarks and the server tests talk to over HTTP."""
import socket
import threading
import urllib.request

import pytest
from fastapi import FastAPI, Response

from tilewave.server.local import serve


def health_app(status: int) -> FastAPI:
    app = FastAPI()

    @app.get("/health")  # async: a sync handler runs on AnyIO's worker threads, which outlive the server idle
    async def health():
        return Response(status_code=status)

    return app


def refused(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) != 0


def test_serve_listens_on_loopback_and_stops_on_exit():
    with serve(health_app(200)) as url:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            assert response.status == 200
    assert refused(url)


def test_a_server_that_never_gets_ready_is_stopped_before_the_error():
    before = set(threading.enumerate())
    with pytest.raises(RuntimeError, match="did not load in 0.5 s"):
        with serve(health_app(503), timeout=0.5):
            pass
    assert set(threading.enumerate()) <= before
