"""A server in this process: uvicorn on 127.0.0.1 (a free port) in a thread, stopped on exit. For the benchmarks
and the tests, which talk to a real server over HTTP; loopback only."""
from __future__ import annotations

import contextlib
import threading
import time
import urllib.error
import urllib.request

import uvicorn


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def serve(app, ready: bool = True, timeout: float = 60.0):
    """Run `app`; yield its base URL once it listens (and, with ready=True, once /health says the model is
    loaded). Stops it, and waits for it, on exit, and also when it fails to start or to get ready in `timeout`
    seconds: a failed start leaves no server behind."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start in {timeout:g} s")
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        while ready and not _healthy(url):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the model did not load in {timeout:g} s: {url}/health never answered 200")
            time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(15)
        if thread.is_alive():
            raise RuntimeError("the server did not stop")
