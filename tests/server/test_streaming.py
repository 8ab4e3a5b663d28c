"""Streaming, concurrency and shutdown on a real server around a model double: the first audio leaves before
the last chunk is begun (event order from hooks, not a timer); a client that disconnects frees its slot and
its chunks are not made; a bounded load of concurrent clients gets every response, none mixed up, 503 only
from a full queue and a retry that then succeeds; SIGTERM ends a server that is streaming within seconds."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2 as httpx
import numpy as np
import pytest

from tests.engine.fake_model import FakeKokoro
from tilewave.engine import Session
from tilewave.engine.pipeline import join_chunks
from tilewave.engine.session import FIRST_CHUNK_PHONEMES
from tilewave.server.app import create_app
from tilewave.server.local import serve

WAIT = 30
SPEECH = "/v1/audio/speech"
LONG = " ".join(f"This is sentence number {i}, which goes on for a while about the sea and the sky." for i in range(12))


def one_chunk_batches(session: Session) -> Session:
    """Each chunk in a batch of its own (a frame budget below any chunk), so that chunks run one by one."""
    session.frame_budget = 1
    return session


def test_the_first_audio_is_sent_before_the_last_chunk_is_begun():
    events, first_sent = [], threading.Event()

    def batch_begins(batch):
        if batch[-1] == last_ids:
            events.append(("last chunk begins", first_sent.wait(WAIT)))

    def sent(speech):
        events.append(("first audio sent", None))
        first_sent.set()

    session = one_chunk_batches(Session(device="cpu", model=FakeKokoro(on_batch=batch_begins)))
    jobs, _ = session.prepare(LONG, first_limit=FIRST_CHUNK_PHONEMES)  # the chunks the server's stream will make
    last_ids = jobs[-1].ids.tolist()
    with session, serve(create_app(session, on_first_audio=sent)) as url:
        with httpx.stream("POST", url + SPEECH, json={"input": LONG, "response_format": "pcm", "seed": 1},
                          timeout=WAIT) as r:
            assert r.status_code == 200
            body = b"".join(r.iter_raw())
    assert len(jobs) >= 3
    assert events == [("first audio sent", None), ("last chunk begins", True)]
    reference = join_chunks([c.audio for c in Session(device="cpu", model=FakeKokoro()).stream(LONG, seed=1)])
    assert len(body) // 2 == reference.size


def test_a_client_that_disconnects_frees_its_slot_and_its_chunks_are_not_made():
    release = threading.Event()
    model = FakeKokoro(on_batch=lambda batch: len(model.batches) > 1 and release.wait(WAIT))
    session = one_chunk_batches(Session(device="cpu", model=model, max_requests=1))
    n_chunks = len(session.pipeline.chunks(LONG, first_limit=FIRST_CHUNK_PHONEMES))
    with session, serve(create_app(session)) as url:
        with httpx.stream("POST", url + SPEECH, json={"input": LONG, "response_format": "pcm"}, timeout=WAIT) as r:
            assert r.status_code == 200
            assert next(r.iter_raw())  # the first chunk's audio, then the client goes
        deadline = time.monotonic() + WAIT
        while session.scheduler.pending() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert session.scheduler.pending() == 0  # cancelled while its second chunk was being made
        release.set()
        r = httpx.post(url + SPEECH, json={"input": "Hi there.", "response_format": "pcm"}, timeout=WAIT)
        assert r.status_code == 200 and len(r.content) > 0
    # the first chunk, the second if it was queued and begun before the cancel (the rest of a stream's text is
    # phonemized while its first chunk is made), then "Hi there."; none of the others
    assert 2 <= len(model.batches) <= 3 < n_chunks + 1


def test_concurrent_clients_all_get_their_own_audio_and_503_only_when_the_queue_is_full():
    clients, each, max_requests = 16, 3, 4
    texts = {(c, k): f"Client {c} asks for request {k}." + " And more words." * ((c + k) % 4) for c in range(clients)
             for k in range(each)}
    with Session(device="cpu", model=FakeKokoro()) as solo_session:
        expected = {key: join_chunks([ch.audio for ch in solo_session.stream(t, seed=i)])
                    for i, (key, t) in enumerate(texts.items())}
    seeds = {key: i for i, key in enumerate(texts)}
    model = FakeKokoro(on_batch=lambda batch: time.sleep(0.01))  # batches take a little time, so the queue fills
    session = Session(device="cpu", model=model, max_requests=max_requests)
    busy = []
    deadline = time.monotonic() + 120

    def client(c):
        got = {}
        with httpx.Client(base_url=url, timeout=WAIT) as http:
            for k in range(each):
                while True:
                    assert time.monotonic() < deadline, "the load test ran past its limit"
                    r = http.post(SPEECH, json={"input": texts[c, k], "response_format": "pcm", "seed": seeds[c, k]})
                    if r.status_code != 503:
                        break
                    busy.append((r.json()["error"]["code"], r.headers.get("retry-after")))
                    time.sleep(0.02)  # a client's back-off, kept short for the test (Retry-After says 1 s)
                assert r.status_code == 200, r.text
                got[c, k] = np.frombuffer(r.content, "<i2")
        return got

    with session, serve(create_app(session)) as url:
        with ThreadPoolExecutor(clients) as pool:
            results = {}
            for got in pool.map(client, range(clients)):
                results.update(got)
    assert set(results) == set(texts)
    for key, audio in results.items():
        reference = np.round(np.clip(expected[key], -1, 1) * 32767).astype(np.int16)
        np.testing.assert_array_equal(audio, reference, err_msg=str(key))
    assert all(b == ("queue_full", "1") for b in busy)
    assert busy  # the load is 16 clients for 4 places: some were refused, and their retries succeeded
    assert max(stats.size for stats in session.batches()) > 1  # the requests' chunks were batched together


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVE_SLOWLY = """
import sys, threading
from tests.engine.fake_model import FakeKokoro
from tilewave import cli
from tilewave.engine import session
slow = threading.Event()
session.load_model = lambda weights, device: FakeKokoro(on_batch=lambda batch: slow.wait(0.5))
sys.exit(cli.main(["serve", "--device", "cpu", "--port", sys.argv[1], "--shutdown-timeout", "1"]))
"""


def test_sigterm_stops_a_streaming_server_within_seconds():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", SERVE_SLOWLY, str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + WAIT
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        long = " ".join([LONG] * 4)  # ~40 chunks at 0.5 s each: 20 s of work
        with httpx.stream("POST", url + SPEECH, json={"input": long, "response_format": "pcm"}, timeout=WAIT) as r:
            assert r.status_code == 200 and next(r.iter_raw())
            proc.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            proc.wait(10)
            took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
    out = proc.stdout.read()
    # uvicorn shuts down, then raises the signal it caught again, so the process ends as SIGTERM says
    assert proc.returncode in (0, -signal.SIGTERM) and "Application shutdown complete" in out, out
    assert took < 6


def test_a_model_failure_mid_stream_cuts_the_audio_and_ends_an_sse_stream_with_an_error():
    def fail_after_the_first(batch):
        if len(model.batches) > 1:
            raise RuntimeError("the device fell over")

    model = FakeKokoro(on_batch=fail_after_the_first)
    session = one_chunk_batches(Session(device="cpu", model=model))
    with session, serve(create_app(session)) as url:
        with httpx.stream("POST", url + SPEECH, json={"input": LONG, "response_format": "pcm"}, timeout=WAIT) as r:
            assert r.status_code == 200
            with pytest.raises(httpx.RemoteProtocolError):  # cut: no final chunk, so no client takes it as whole
                for _ in r.iter_raw():
                    pass
        model.batches.clear()
        r = httpx.post(url + SPEECH, json={"input": LONG, "response_format": "pcm", "stream_format": "sse"},
                       timeout=WAIT)
        events = [json.loads(block[len("data: "):]) for block in r.text.strip().split("\n\n")]
    assert [e["type"] for e in events] == ["speech.audio.delta", "error"]
    assert "the device fell over" in events[-1]["error"]["message"]
