"""The HTTP API around a model double: WAV out, voices listed, bad requests answered 400 with the reason."""
import argparse
import io

import numpy as np
import pytest
import soundfile
from fastapi.testclient import TestClient

from tests.engine.fake_model import FakeKokoro
from tilewave import cli_serve
from tilewave.server.app import create_app


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(device="cpu", model=FakeKokoro()))


def test_speech_is_a_24khz_wav(client):
    r = client.post("/v1/audio/speech", json={"model": "kokoro", "input": "Hello there.", "voice": "jm_kumo",
                                              "speed": 1.2, "seed": 3})
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    audio, rate = soundfile.read(io.BytesIO(r.content), dtype="float32")
    assert rate == 24_000 and audio.size > 0 and np.isfinite(audio).all()


def test_voices(client):
    r = client.get("/voices")
    assert r.status_code == 200 and r.json() == {"voices": ["jf_alpha", "jf_gongitsune", "jf_nezumi",
                                                            "jf_tebukuro", "jm_kumo"], "default": "jf_alpha"}


@pytest.mark.parametrize("body, message", [
    ({"input": "   "}, "whitespace"), ({"input": "Hi.", "voice": "nobody"}, "unknown voice"),
    ({"input": "Hi.", "speed": 9}, "out of range"), ({"input": "Hi.", "response_format": "mp3"}, "'wav'"),
])
def test_bad_requests(client, body, message):
    r = client.post("/v1/audio/speech", json=body)
    assert r.status_code == 400 and message in r.json()["error"]


def test_missing_input_is_rejected_by_the_schema(client):
    assert client.post("/v1/audio/speech", json={"voice": "jf_alpha"}).status_code == 422


def test_serve_command_hands_the_app_to_uvicorn(monkeypatch, capsys):
    import uvicorn

    from tilewave.engine import pipeline as engine_pipeline

    served = {}
    monkeypatch.setattr(engine_pipeline, "load_model", lambda weights, device: FakeKokoro())
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port: served.update(app=app, host=host, port=port))
    parser = argparse.ArgumentParser(prog="tilewave")
    cli_serve.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["serve", "--port", "8123", "--device", "cpu"])
    assert args.run(args) == 0
    assert served["host"] == "127.0.0.1" and served["port"] == 8123
    assert {"/v1/audio/speech", "/voices"} <= {route.path for route in served["app"].routes}
    monkeypatch.undo()
    args = parser.parse_args(["serve", "--weights", "/nonexistent/kokoro.onnx", "--device", "cpu"])
    assert args.run(args) == 1 and "cannot read the weights file" in capsys.readouterr().err
