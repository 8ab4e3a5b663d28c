"""The HTTP API around a model double: audio out in each format, voices listed, bad requests answered 400."""
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


@pytest.mark.parametrize("fmt, media, sf_format", [("flac", "audio/flac", "FLAC"), ("mp3", "audio/mpeg", "MP3"),
                                                     ("opus", "audio/ogg", "OGG")])
def test_speech_in_other_formats(client, fmt, media, sf_format):
    r = client.post("/v1/audio/speech", json={"input": "Hello there.", "response_format": fmt, "seed": 3})
    assert r.status_code == 200 and r.headers["content-type"] == media
    info = soundfile.info(io.BytesIO(r.content))
    assert info.format == sf_format and info.samplerate == 24_000 and info.frames > 0


def test_pcm_is_the_wav_samples_without_a_header(client):
    body = {"input": "Hello there.", "seed": 3}
    wav = client.post("/v1/audio/speech", json=body)
    pcm = client.post("/v1/audio/speech", json={**body, "response_format": "pcm"})
    assert pcm.status_code == 200 and pcm.headers["content-type"] == "audio/pcm"
    samples, _ = soundfile.read(io.BytesIO(wav.content), dtype="int16")
    assert np.array_equal(np.frombuffer(pcm.content, "<i2"), samples)


def test_voices(client):
    r = client.get("/voices")
    assert r.status_code == 200 and r.json() == {"voices": ["jf_alpha", "jf_gongitsune", "jf_nezumi",
                                                            "jf_tebukuro", "jm_kumo"], "default": "af_heart"}


@pytest.mark.parametrize("body, message", [
    ({"input": "   "}, "whitespace"), ({"input": "Hi.", "voice": "nobody"}, "unknown voice"),
    ({"input": "Hi.", "speed": 9}, "out of range"), ({"input": "Hi.", "response_format": "aac"}, "'mp3'"),
])
def test_bad_requests(client, body, message):
    r = client.post("/v1/audio/speech", json=body)
    assert r.status_code == 400 and message in r.json()["error"]


def test_missing_input_is_rejected_by_the_schema(client):
    assert client.post("/v1/audio/speech", json={"voice": "jf_alpha"}).status_code == 422


def test_serve_command_hands_the_app_to_uvicorn(monkeypatch, capsys):
    import uvicorn

    from tilewave.engine import session as engine_session

    served = {}
    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: FakeKokoro())
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
