"""A real server for the tests: uvicorn on 127.0.0.1 (a free port) in a thread, stopped on exit."""
from __future__ import annotations

import contextlib
import threading
import time

import httpx2 as httpx
import uvicorn


@contextlib.contextmanager
def serve(app, ready: bool = True, timeout: float = 60.0):
    """Run `app`; yield its base URL once it listens (and, with ready=True, once /health says the model is
    loaded). Stops it, and waits for it, on exit."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    while ready and httpx.get(f"{url}/health").status_code != 200:
        assert time.monotonic() < deadline, "the model did not load"
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(15)
        assert not thread.is_alive(), "the server did not stop"
