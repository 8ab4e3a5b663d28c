"""The `openai` package pointed at the server, streamed and not (a model double, then the real Kokoro once), and
`tilewave serve` as a command."""
import argparse
import io
import socket

import av
import numpy as np
import openai
import pytest
import soundfile

from tests.engine.fake_model import FakeKokoro
from tilewave.cli import serve as cli_serve
from tilewave.engine import Session
from tilewave.engine.pipeline import join_chunks
from tilewave.engine.session import FIRST_CHUNK_PHONEMES
from tilewave.server.app import create_app
from tilewave.server.local import serve

TEXT = "Hello there. This is tilewave, answering an OpenAI client."
KEY = "test-key-123"


def reference(session, text, seed, speed=1.0):
    audio = join_chunks([c.audio for c in session.stream(text, speed=speed, seed=seed)])
    return np.round(np.clip(audio, -1, 1) * 32767).astype(np.int16)


@pytest.fixture(scope="module")
def fake():
    with Session(device="cpu", model=FakeKokoro()) as session, serve(create_app(session, api_key=KEY)) as url:
        yield session, openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)


def test_the_openai_client_gets_the_audio_whole(fake):
    session, client = fake
    r = client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT, response_format="wav",
                                   extra_body={"seed": 4})
    samples, rate = soundfile.read(io.BytesIO(r.read()), dtype="int16")
    assert rate == 24_000
    np.testing.assert_array_equal(samples, reference(session, TEXT, 4))


def test_the_openai_client_streams(fake):
    session, client = fake
    parts = []
    with client.audio.speech.with_streaming_response.create(model="tts-1-hd", voice="nova", input=TEXT, speed=1.0,
                                                             response_format="pcm", extra_body={"seed": 5}) as r:
        assert r.headers["content-type"] == "audio/pcm"
        for part in r.iter_bytes(4096):
            parts.append(part)
    assert len(parts) > 1
    np.testing.assert_array_equal(np.frombuffer(b"".join(parts), "<i2"), reference(session, TEXT, 5))


def test_the_openai_client_sees_openais_errors(fake):
    _, client = fake
    with pytest.raises(openai.BadRequestError) as info:
        client.audio.speech.create(model="tts-1", voice="/etc/passwd", input=TEXT)
    assert info.value.body["param"] == "voice" and info.value.body["code"] == "invalid_voice"
    with pytest.raises(openai.NotFoundError):
        client.audio.speech.create(model="whisper-1", voice="alloy", input=TEXT)
    bad_key = client.with_options(api_key="nope")
    with pytest.raises(openai.AuthenticationError):
        bad_key.audio.speech.create(model="tts-1", voice="alloy", input=TEXT)
    assert [m.id for m in client.models.list()] == ["kokoro", "tts-1", "tts-1-hd"]


def test_the_real_model_through_the_openai_client():
    """Kokoro itself (CPU, one short sentence): the streamed mp3 decodes to the engine's own run's length."""
    text = "Hi there."
    with Session(device="cpu") as session, serve(create_app(session), timeout=300) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
        with client.audio.speech.with_streaming_response.create(model="kokoro", voice="af_heart", input=text,
                                                                 extra_body={"seed": 1}) as r:
            data = r.read()
        pcm = client.audio.speech.create(model="kokoro", voice="af_heart", input=text, response_format="pcm",
                                         extra_body={"seed": 1}).read()
        expected = reference(session, text, 1)
    np.testing.assert_array_equal(np.frombuffer(pcm, "<i2"), expected)
    with av.open(io.BytesIO(data)) as container:
        decoded = sum(frame.samples for frame in container.decode(audio=0))
        assert container.streams.audio[0].sample_rate == 24_000
    assert expected.size <= decoded <= expected.size + 2 * 1152
    assert len(expected) > 0.3 * 24_000 and np.abs(expected).max() > 1000  # speech, not silence
    assert len(session.pipeline.chunks(text, first_limit=FIRST_CHUNK_PHONEMES)) == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(argv):
    parser = argparse.ArgumentParser(prog="tilewave")
    cli_serve.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_serve_takes_the_api_key_from_the_environment(monkeypatch):
    assert parse(["serve"]).api_key is None
    monkeypatch.setenv(cli_serve.API_KEY_ENV, "from-env")
    assert parse(["serve"]).api_key == "from-env"
    assert parse(["serve", "--api-key", "given"]).api_key == "given"


def test_serve_stops_with_an_error_when_the_weights_cannot_be_read(capsys):
    args = parse(["serve", "--weights", "/nonexistent/kokoro.onnx", "--device", "cpu", "--port", str(free_port())])
    assert args.run(args) == 1
    assert "cannot read the weights file" in capsys.readouterr().err
    args = parse(["serve", "--device", "cpu", "--memory-budget", "lots"])
    assert args.run(args) == 2 and "memory budget 'lots'" in capsys.readouterr().err
