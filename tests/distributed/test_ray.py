"""tilewave on a local Ray cluster (2 CPUs, one for the engine actor or replica), with the real model: batch
synthesis on Ray Data gives the single-process run's files (within the batched pass's bound), survives a killed
driver, and Ray Serve answers the speech call and refuses a burst beyond its queue with 503s instead of hanging."""
import io
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests
import soundfile

from tests.distributed import manifests
from tests.distributed.helpers import (assert_same_audio, audio_files, batch_command, kill_after, partial_files,
                                       results, snapshot)
from tilewave.distributed import KokoroSynthesizer, Options, run_ray

GOOD = manifests.GOOD[:5]
BAD = ("b-voice", "b-speed", "b-text")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return manifests.write(tmp_path_factory.mktemp("ray-manifest") / "items.jsonl", GOOD, BAD)


def _same_as_reference(out, reference):
    expected = audio_files(reference)
    assert_same_audio(audio_files(out), {g["id"]: expected[g["id"]] for g in GOOD})
    by_id = {r["id"]: r for r in results(reference)}
    for r in results(out):
        assert {k: r.get(k) for k in ("status", "file", "seconds", "phonemes", "error")} == \
            {k: by_id[r["id"]].get(k) for k in ("status", "file", "seconds", "phonemes", "error")}
        if r["status"] == "ok":  # the words come back through Ray Data's columns, timed as in one process
            assert [w["word"] for w in r["words"]] == [w["word"] for w in by_id[r["id"]]["words"]]
            for w, ref in zip(r["words"], by_id[r["id"]]["words"]):
                assert w["start"] == pytest.approx(ref["start"], abs=0.03) and w["end"] == pytest.approx(ref["end"], abs=0.03)
    assert partial_files(out) == []


def test_on_ray_every_item_is_written_once_with_the_single_process_audio_and_a_rerun_writes_nothing(
        ray_cluster, small, reference, tmp_path):
    summary = run_ray(small, Options(str(tmp_path)), batch_size=2)
    assert (summary.written, summary.skipped, summary.failed) == (len(GOOD), 0, len(BAD))
    assert sorted(r["id"] for r in results(tmp_path)) == sorted([g["id"] for g in GOOD] + list(BAD))
    _same_as_reference(tmp_path, reference)
    before = snapshot(tmp_path)
    again = run_ray(small, Options(str(tmp_path)))
    assert (again.written, again.skipped, again.failed) == (0, len(GOOD), len(BAD))
    assert snapshot(tmp_path) == before


def test_a_killed_ray_driver_resumed_has_every_item_once_with_the_same_audio(ray_cluster, small, reference,
                                                                             tmp_path):
    import ray

    kill_after(batch_command(small, tmp_path, "--ray", ray_cluster, "--batch-size", "1"), tmp_path, 2)
    deadline = time.monotonic() + 60  # the dead driver's actor is ended by Ray: its CPU comes back
    while ray.available_resources().get("CPU", 0) < 2:
        assert time.monotonic() < deadline, "the killed driver's actor still holds its CPU after 60 s"
        time.sleep(0.2)
    assert 2 <= len(audio_files(tmp_path)) < len(GOOD)
    summary = run_ray(small, Options(str(tmp_path)))
    assert summary.written + summary.skipped == len(GOOD)
    _same_as_reference(tmp_path, reference)


def test_the_synthesizer_is_a_map_batches_callable_returning_audio(ray_cluster):
    import ray

    rows = [{"text": "Hello there.", "seed": 1}, {"text": "Hi.", "voice": "nobody_here", "seed": 1}]
    out = ray.data.from_items(rows).map_batches(KokoroSynthesizer, batch_size=2, num_cpus=1,
                                                compute=ray.data.ActorPoolStrategy(size=1)).take_all()
    assert [r["status"] for r in out] == ["ok", "error"] and "nobody_here" in out[1]["error"]
    audio = np.asarray(out[0]["audio"], dtype=np.float32)
    assert audio.size == round(out[0]["seconds"] * 24_000) > 2400 and np.isfinite(audio).all() and np.abs(audio).max() > 0.05


@pytest.fixture(scope="module")
def served(ray_cluster):
    """The speech API on Ray Serve: one CPU replica holding one request, one more waiting."""
    import socket

    from ray import serve

    from tilewave.distributed.serve import speech_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(speech_app(max_ongoing_requests=1, max_queued_requests=1, device="cpu"), name="tilewave",
              route_prefix="/")
    yield f"http://127.0.0.1:{port}"
    serve.shutdown()


def test_ray_serve_answers_the_speech_call_with_audio(served):
    reply = requests.post(f"{served}/v1/audio/speech", json={"model": "tts-1", "input": "Hello there.", "seed": 1,
                                                              "response_format": "wav"}, timeout=120)
    assert reply.status_code == 200 and reply.headers["content-type"] == "audio/wav"
    audio, rate = soundfile.read(io.BytesIO(reply.content), dtype="float32")
    assert rate == 24_000 and audio.size > 12_000 and np.isfinite(audio).all() and np.abs(audio).max() > 0.05
    bad = requests.post(f"{served}/v1/audio/speech", json={"input": "Hi.", "voice": "nobody_here"}, timeout=60)
    assert bad.status_code == 400 and "nobody_here" in bad.json()["error"]["message"]


def test_a_burst_beyond_the_queue_gets_503s_not_a_hang(served):
    def call(i):
        return requests.post(f"{served}/v1/audio/speech", json={"input": "It is raining today.", "seed": i},
                             timeout=120).status_code

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(call, range(8)))
    assert set(codes) <= {200, 503} and codes.count(503) >= 1 and codes.count(200) >= 1, codes
    assert time.monotonic() - started < 120
