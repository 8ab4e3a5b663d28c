"""`tilewave say --server URL` / $TILEWAVE_SERVER: the speech of a real server (uvicorn on loopback around a model
double) written by a process that never imports torch; a host off this machine refused; an absent server, or an
option only this process can honour, spoken in process after a note."""
import argparse
import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import soundfile

from tests.engine.fake_model import FakeKokoro
from tilewave.cli import say as cli_say
from tilewave.cli.say_server import SERVER_ENV
from tilewave.engine import Session
from tilewave.engine import session as engine_session
from tilewave.server.app import create_app
from tilewave.server.local import serve

TEXT = "Hello there. How are you today?"


def say(*argv) -> int:
    parser = argparse.ArgumentParser(prog="tilewave")
    cli_say.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["say", *argv])
    return args.run(args)


@pytest.fixture(scope="module")
def url():
    with Session(device="cpu", model=FakeKokoro()) as session, serve(create_app(session)) as base:
        yield base


@pytest.fixture
def fake_model(monkeypatch):
    model = FakeKokoro()
    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: model)
    return model


@pytest.fixture(autouse=True)
def no_server_in_the_environment(monkeypatch):
    monkeypatch.delenv(SERVER_ENV, raising=False)


def served(url: str, **fields) -> np.ndarray:
    """int16 samples of what the server itself answers for TEXT, asked directly."""
    body = {"model": "kokoro", "input": TEXT, "response_format": "wav", "lang_code": "en-us", "seed": 5, **fields}
    request = urllib.request.Request(url + "/v1/audio/speech", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return soundfile.read(__import__("io").BytesIO(response.read()), dtype="int16")[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SAY_THROUGH_SERVER = """
import sys
from tilewave.cli import main
code = main(["say", sys.argv[1], "--server", sys.argv[2], "-o", sys.argv[3], "--seed", "5", "--speed", "1.2"])
print("torch imported:", "torch" in sys.modules)
sys.exit(code)
"""


def test_say_writes_what_the_server_makes_without_importing_torch(tmp_path, url):
    out = tmp_path / "hi.wav"
    run = subprocess.run([sys.executable, "-c", SAY_THROUGH_SERVER, TEXT, url, out], capture_output=True,
                         text=True, timeout=120, cwd=Path(__file__).parents[1])
    assert run.returncode == 0, run.stderr
    assert f"wrote {out}: " in run.stdout and f"from the server at {url}" in run.stdout, run.stdout
    assert "torch imported: False" in run.stdout
    audio, rate = soundfile.read(out, dtype="int16")
    expected = served(url, speed=1.2 ** 2)  # OpenAI's speed is Kokoro's squared
    assert rate == 24_000 and audio.size > 2400 and np.abs(audio).max() > 1000
    np.testing.assert_array_equal(audio, expected)
    assert audio.size != served(url).size  # the speed reached the server


def test_the_environment_variable_names_the_server_and_the_flag_wins(tmp_path, url, monkeypatch, capsys):
    monkeypatch.setenv(SERVER_ENV, url)
    out = tmp_path / "env.flac"
    assert say(TEXT, "-o", str(out), "--seed", "5") == 0
    assert f"from the server at {url}" in capsys.readouterr().out
    audio, rate = soundfile.read(out, dtype="int16")
    assert soundfile.info(out).format == "FLAC" and rate == 24_000
    np.testing.assert_array_equal(audio, served(url))
    monkeypatch.setenv(SERVER_ENV, "http://192.0.2.1:8000")  # refused if read: the flag's address is used
    assert say(TEXT, "-o", str(out), "--server", url) == 0
    assert f"from the server at {url}" in capsys.readouterr().out


def test_no_server_speaks_in_process_although_the_variable_is_set(tmp_path, url, fake_model, monkeypatch, capsys):
    monkeypatch.setenv(SERVER_ENV, url)
    assert say(TEXT, "-o", str(tmp_path / "local.wav"), "--no-server") == 0
    captured = capsys.readouterr()
    assert "from the server" not in captured.out and " on cpu " in captured.out and captured.err == ""


@pytest.mark.parametrize("address", ["http://192.168.1.5:8000", "http://example.com:8000", "10.0.0.1:8000",
                                     "http://[2001:db8::1]:8000", "ftp://127.0.0.1:8000"])
def test_a_server_off_this_machine_is_refused_before_any_work(tmp_path, address, capsys):
    out = tmp_path / "x.wav"
    assert say(TEXT, "-o", str(out), "--server", address) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --server ") and address in err and err.count("\n") == 1
    assert not out.exists()


def test_a_variable_off_this_machine_is_refused_and_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(SERVER_ENV, "http://203.0.113.9:8000")
    assert say(TEXT, "-o", str(tmp_path / "x.wav")) == 2
    assert f"${SERVER_ENV}" in capsys.readouterr().err


@pytest.mark.parametrize("address", ["http://localhost:{port}", "http://127.3.2.1:{port}", "http://[::1]:{port}"])
def test_a_loopback_server_that_does_not_answer_leaves_say_in_process(tmp_path, fake_model, address, capsys):
    out = tmp_path / "local.wav"
    address = address.format(port=closed_port())
    assert say(TEXT, "-o", str(out), "--server", address, "--seed", "1") == 0
    captured = capsys.readouterr()
    assert captured.err == f"note: no server answers at {address}; speaking in this process\n"
    assert f"wrote {out}: " in captured.out and "from the server" not in captured.out
    assert soundfile.info(out).frames > 2400


def test_an_option_only_this_process_honours_speaks_in_process(tmp_path, url, fake_model, capsys):
    out, words = tmp_path / "t.wav", tmp_path / "words.srt"
    assert say(TEXT, "-o", str(out), "--server", url, "--timestamps", str(words)) == 0
    captured = capsys.readouterr()
    assert captured.err == "note: the server cannot honour --timestamps; speaking in this process\n"
    assert "from the server" not in captured.out and words.read_text().strip()
    # the server runs its own dtype (its auto): one named here is this process's to honour
    assert say(TEXT, "-o", str(out), "--server", url, "--dtype", "float32") == 0
    captured = capsys.readouterr()
    assert captured.err == "note: the server cannot honour --dtype; speaking in this process\n"
    assert "from the server" not in captured.out and " in float32 " in captured.out


def test_the_servers_refusal_is_one_line_with_its_message(tmp_path, url, capsys):
    out = tmp_path / "long.wav"
    assert say("word " * 900, "-o", str(out), "--server", url) == 2  # 4500 characters: more than a request may have
    err = capsys.readouterr().err
    assert err.startswith(f"error: the server at {url} refused the request (400): 'input' is 4500 characters")
    assert err.count("\n") == 1 and not out.exists()
