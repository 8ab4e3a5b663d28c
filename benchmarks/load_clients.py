"""The load test's clients (bench_server.py), in a process of their own: the server's Python threads then share the
GIL with nothing but the server's own work, as behind a real port.

    python benchmarks/load_clients.py      # reads one JSON round a line on stdin, writes one JSON result a line

A round: {"url", "texts", "seeds", "seconds"}: one client thread per text, each with its own connection, sends its
streamed request (POST /v1/audio/speech, stream_format "audio", response_format "pcm", the seed) once all are
ready (a barrier); the round ends when all have ended or `seconds` have passed. Result: {"wall": seconds from the
barrier to the last end, "results": [{"ttfa", "total", "bytes", "busy"}], "errors": [...]}; both times count from
the first attempt (a 503 is counted in "busy" and retried after its Retry-After). Loopback URLs only.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx2 as httpx


def one_request(http: httpx.Client, url: str, text: str, seed: int, deadline: float) -> dict:
    body = {"model": "kokoro", "input": text, "response_format": "pcm", "stream_format": "audio", "seed": seed}
    start, busy = time.perf_counter(), 0  # both times count from the first attempt: a retry is the client's wait
    while True:
        first, size = None, 0
        with http.stream("POST", f"{url}/v1/audio/speech", json=body) as r:
            if r.status_code == 503 and time.monotonic() < deadline:
                r.read()
                busy += 1
                time.sleep(float(r.headers.get("retry-after", 1)))
                continue
            if r.status_code != 200:
                raise RuntimeError(f"HTTP {r.status_code}: {r.read()[:200]!r}")
            for part in r.iter_raw():  # pcm is sent as it is made: a part is audio bytes
                if part and first is None:
                    first = time.perf_counter()
                size += len(part)
        if first is None:
            raise RuntimeError("a 200 response with no audio")
        end = time.perf_counter()
        return {"ttfa": first - start, "total": end - start, "bytes": size, "busy": busy}


def run_round(url: str, texts: list[str], seeds: list[int], seconds: float) -> dict:
    """The requests at once, one per client thread (see the module's doc)."""
    if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"the load test sends to loopback only, not {url}")
    deadline = time.monotonic() + seconds
    results, errors, lock = [], [], threading.Lock()
    barrier = threading.Barrier(len(texts) + 1)

    def client(text: str, seed: int) -> None:
        with httpx.Client(timeout=max(1.0, deadline - time.monotonic())) as http:
            barrier.wait()
            try:
                out = one_request(http, url, text, seed, deadline)
            except Exception as exc:  # an error of this request; the others go on
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                return
        with lock:
            results.append(out)

    threads = [threading.Thread(target=client, args=(t, s), daemon=True) for t, s in zip(texts, seeds)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return {"wall": time.perf_counter() - start, "results": list(results), "errors": list(errors)}


class ClientProcess:
    """This file as a child process, a round at a time (run_round's arguments and result as JSON lines)."""

    def __init__(self) -> None:
        self.child = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)

    def run_round(self, url: str, texts: list[str], seeds: list[int], seconds: float) -> dict:
        self.child.stdin.write(json.dumps({"url": url, "texts": texts, "seeds": seeds, "seconds": seconds}) + "\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError(f"the load clients' process ended (status {self.child.poll()})")
        return json.loads(line)

    def close(self) -> None:
        self.child.stdin.close()
        try:
            self.child.wait(10)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()


def main() -> int:
    for line in sys.stdin:
        r = json.loads(line)
        print(json.dumps(run_round(r["url"], r["texts"], r["seeds"], r["seconds"])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
