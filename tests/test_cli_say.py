"""`tilewave say` around a model double: it writes a 24 kHz WAV, and every bad input is one line and no file."""
import argparse
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

from tests.engine.fake_model import STAGES, FakeKokoro
from tilewave.cli import say as cli_say
from tilewave.engine import session as engine_session


def say(*argv) -> int:
    parser = argparse.ArgumentParser(prog="tilewave")
    cli_say.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["say", *argv])
    return args.run(args)


@pytest.fixture
def fake_model(monkeypatch):
    model = FakeKokoro()
    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: model)
    return model


def test_writes_a_24khz_wav(tmp_path, fake_model, capsys):
    out = tmp_path / "hello.wav"
    assert say("Hello there. How are you?", "-o", str(out), "--device", "cpu", "--seed", "1") == 0
    audio, rate = soundfile.read(out, dtype="float32")
    assert rate == 24_000 and audio.ndim == 1 and np.isfinite(audio).all() and np.abs(audio).max() > 0.1
    assert f"wrote {out}" in capsys.readouterr().out


@pytest.mark.parametrize("suffix, fmt", [(".flac", "FLAC"), (".ogg", "OGG"), (".mp3", "MP3"), (".WAV", "WAV")])
def test_the_file_name_picks_the_format(tmp_path, fake_model, suffix, fmt):
    out = tmp_path / f"hello{suffix}"
    assert say("Hello there.", "-o", str(out), "--device", "cpu", "--seed", "1") == 0
    info = soundfile.info(out)
    assert info.format == fmt and info.samplerate == 24_000 and info.frames > 2400
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left beside it


def test_text_from_stdin_and_from_a_file(tmp_path, fake_model, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Words from standard input."))
    assert say("-", "-o", str(tmp_path / "stdin.wav")) == 0
    (tmp_path / "story.txt").write_text("A line from a file.\nAnd another one.", encoding="utf-8")
    assert say("--file", str(tmp_path / "story.txt"), "-o", str(tmp_path / "file.wav")) == 0
    assert soundfile.info(tmp_path / "stdin.wav").frames > 0 and soundfile.info(tmp_path / "file.wav").frames > 0


def test_phonemes_voice_blend_lang_speed(tmp_path, fake_model):
    out = str(tmp_path / "p.wav")
    assert say("hˈɛlO wˈɜɹld.", "--phonemes", "--voice", "jf_alpha:0.6,jm_kumo:0.4", "--speed", "1.5", "-o", out) == 0
    assert say("Hello world.", "--lang", "en-gb", "--voice", "jf_tebukuro", "-o", out) == 0
    assert fake_model.calls[0]["speed"] == 1.5
    assert say("Hello world.", "--memory-budget", "2GB", "-o", out) == 0


def test_profile_prints_stages_and_placements(tmp_path, fake_model, monkeypatch, capsys):
    assert say("Hello.", "--profile", "-o", str(tmp_path / "p.wav")) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("load model", "phonemize", *STAGES)) and "ran on" in out
    assert "peak memory: " in out and "s of imports, " in out and "s of model loading, " in out


def test_threads_are_set_and_checked(tmp_path, fake_model, capsys):
    import torch

    before = torch.get_num_threads()
    try:
        assert say("Hello.", "--threads", "1", "-o", str(tmp_path / "t.wav")) == 0 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert say("Hello.", "--threads", "0", "-o", str(tmp_path / "t.wav")) == 2
    assert "threads must be a whole number of at least 1, got 0" in capsys.readouterr().err


# Run in a fresh interpreter, with the real Kokoro model on random weights (so that every op of a CPU synthesis
# runs) in place of the downloaded ones.
RANDOM_KOKORO = """
import torch
from tilewave.engine import session
from tilewave.models.kokoro import KokoroModel
gen = torch.Generator().manual_seed(0)
weights = {k: torch.randn(s, generator=gen) * 0.02 for k, s in KokoroModel.expected_shapes().items()}
session.load_model = lambda _, device: KokoroModel.from_weights(weights, device)
"""

SAY_IMPORTS = """
import sys
from tilewave.cli import build_parser
build_parser("say").parse_args(["say", "Hi.", "--device", "cpu"])
print("parsed:", *(m for m in ("torch", "triton", "numpy") if m in sys.modules))
""" + RANDOM_KOKORO + """
from tilewave.cli import main
assert main(["say", "Hi.", "--device", "cpu", "-o", sys.argv[1]]) == 0
print("ran:", *(m for m in sys.modules
                if m.split(".")[0] in ("fastapi", "uvicorn", "starlette", "ray", "onnx", "onnxruntime", "triton")
                or m.startswith(("tilewave.server", "tilewave.distributed", "tilewave.asr", "tilewave.harness",
                                 "tilewave.kernels."))))
"""


def _python(script: str, *args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[1], **kw)


def test_say_parses_without_torch_and_runs_on_the_cpu_without_triton_the_server_ray_or_onnx(tmp_path):
    run = _python(SAY_IMPORTS, tmp_path / "hi.wav")
    assert run.returncode == 0, run.stderr
    lines = {line.split(":")[0]: line for line in run.stdout.splitlines()}
    assert lines["parsed"] == "parsed:" and lines["ran"] == "ran:", run.stdout


def test_the_executable_ends_at_once_after_say_with_its_output_flushed_and_the_file_whole(tmp_path):
    out = tmp_path / "hi.wav"
    script = "import sys\n" + RANDOM_KOKORO + "from tilewave.cli import entry\nentry()\nprint('not reached')"
    run = _python(script, "say", "Hi.", "--device", "cpu", "-o", out)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"wrote {out}: ") and "not reached" not in run.stdout, run.stdout
    audio, rate = soundfile.read(out)
    assert rate == 24_000 and audio.size > 0
    bad = _python(script, "say", "", "-o", out)
    assert bad.returncode == 2 and "error:" in bad.stderr


# The text's chunks from the forked child (no torch before say: the model double comes after the fork), then the
# same say with torch imported first (no fork): the same file, bit for bit.
SAY_AHEAD = """
import sys
from tilewave.cli import say as cli_say
original = cli_say._run
def traced(args, text, ahead, start):
    print("forked:", ahead._pid is not None)
    exec(sys.argv[2], globals())
    return original(args, text, ahead, start)
cli_say._run = traced
from tilewave.cli import main
assert main(["say", "Dr. Smith paid $12.50. [pause:0.3] Then she left, twice!", "--device", "cpu", "--seed", "3",
             "-o", sys.argv[1]]) == 0
"""


def test_say_takes_its_chunks_from_the_forked_child_and_writes_what_it_would_alone(tmp_path):
    forked = _python(SAY_AHEAD, tmp_path / "a.wav", RANDOM_KOKORO)
    assert forked.returncode == 0, forked.stderr
    assert "forked: True" in forked.stdout, forked.stdout
    alone = _python(RANDOM_KOKORO + SAY_AHEAD, tmp_path / "b.wav", "")
    assert alone.returncode == 0, alone.stderr
    assert "forked: False" in alone.stdout, alone.stdout
    a, b = soundfile.read(tmp_path / "a.wav")[0], soundfile.read(tmp_path / "b.wav")[0]
    assert a.size > 24_000 and np.isfinite(a).all() and np.array_equal(a, b)


BAD_INPUTS = [
    (["", "-o", "{out}"], "empty"),
    (["  \n\t ", "-o", "{out}"], "whitespace"),
    (["... !!! ?", "-o", "{out}"], "nothing to say"),
    (["-o", "{out}"], "no text given"),
    (["Hi.", "--file", "{tmp}/story.txt", "-o", "{out}"], "not both"),
    (["--file", "{tmp}/missing.txt", "-o", "{out}"], "cannot read the text file"),
    (["Hi.", "--voice", "af_hearth", "-o", "{out}"], "unknown voice 'af_hearth'; choose a stock voice"),
    (["Hi.", "--voice", "jf_alpha:2,jm_kumo:-1", "-o", "{out}"], "blend"),
    (["Hi.", "--voice", "{tmp}/none.npz", "-o", "{out}"], "does not exist"),
    (["Hi.", "--speed", "2.5", "-o", "{out}"], "speed 2.5 is out of range"),
    (["Hi.", "--speed", "0.1", "-o", "{out}"], "out of range"),
    (["Hi.", "--speed", "nan", "-o", "{out}"], "out of range"),
    (["hʘ wX", "--phonemes", "-o", "{out}"], "'ʘ'"),
    (["Hi.", "-o", "{tmp}/no/such/folder/x.wav"], "does not exist"),
    (["Hi.", "-o", "{tmp}/x.aac"], ".aac is not an audio format we write; name it .wav, .flac, .ogg, .mp3"),
    (["Hi.", "-o", "{tmp}/x"], "no file suffix"),
    (["Hi.", "--seed", "-3", "-o", "{out}"], "seed"),
    (["Hi.", "--memory-budget", "1.5GB", "-o", "{out}"], "below what one full chunk"),
    (["Hi.", "--memory-budget", "lots", "-o", "{out}"], "not a size"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUTS)
def test_bad_input_is_one_line_and_no_file(tmp_path, fake_model, capsys, argv, message):
    out = tmp_path / "out.wav"
    argv = [a.format(out=out, tmp=tmp_path) for a in argv]
    assert say(*argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
    assert fake_model.calls == []


def test_unreadable_weights(tmp_path, capsys):
    out = tmp_path / "out.wav"
    assert say("Hi.", "--weights", str(tmp_path / "missing.onnx"), "-o", str(out)) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read the weights file") and "Traceback" not in err
    assert not out.exists()


def test_nan_audio_never_reaches_a_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: FakeKokoro(nan=True))
    assert say("Hello.", "-o", str(tmp_path / "out.wav")) == 1
    assert "NaN" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_cuda_without_a_gpu(tmp_path, fake_model, capsys):
    import torch

    rc = say("Hello.", "--device", "cuda", "-o", str(tmp_path / "out.wav"))
    if torch.cuda.is_available():
        assert rc == 0
    else:
        assert rc == 2 and "no CUDA device" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_wav_gets_the_usual_file_permissions(tmp_path):
    import os
    import stat

    from tilewave.engine.wav import write_audio

    out = tmp_path / "perm.wav"
    umask = os.umask(0o022)
    try:
        write_audio(str(out), np.zeros(2400, dtype=np.float32) + 0.1, 24000)
    finally:
        os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_precision_flag_reaches_the_model(tmp_path, monkeypatch):
    from tests.engine.test_pipeline import PrecisionRecorder

    model = PrecisionRecorder()
    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: model)
    assert say("Hello.", "--precision", "tf32x3", "-o", str(tmp_path / "p.wav"), "--device", "cpu") == 0
    assert model.calls_precision == ["tf32x3"]
    with pytest.raises(SystemExit):  # argparse: an unknown choice is a usage error
        say("Hello.", "--precision", "half", "-o", str(tmp_path / "q.wav"))


def test_dtype_flag_reaches_the_model_and_a_bad_one_names_the_choices(tmp_path, fake_model, capsys):
    assert say("Hello.", "--dtype", "bfloat16", "-o", str(tmp_path / "b.wav"), "--device", "cpu") == 0
    assert say("Hello.", "--dtype", "float32", "-o", str(tmp_path / "f.wav"), "--device", "cpu") == 0
    assert fake_model.dtypes == [torch.bfloat16, torch.float32]
    with pytest.raises(SystemExit) as exit_:  # argparse: an unknown choice is a usage error, exit 2
        say("Hello.", "--dtype", "float16", "-o", str(tmp_path / "h.wav"))
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "float16" in err and "float32" in err and "bfloat16" in err
    assert not (tmp_path / "h.wav").exists()


def test_dtype_auto_is_the_default_and_says_what_it_chose(tmp_path, fake_model, capsys, monkeypatch):
    from tilewave import precision

    for flags, want in (({"avx2", "amx_bf16"}, torch.bfloat16), ({"avx2", "fma"}, torch.float32),
                        ({"avx512f", "avx512_bf16"}, torch.bfloat16)):
        monkeypatch.setattr(precision, "cpu_flags", lambda path="/proc/cpuinfo", f=flags: set(f))
        for asked in (("--dtype", "auto"), ()):
            capsys.readouterr()
            assert say("Hello.", *asked, "-o", str(tmp_path / "a.wav"), "--device", "cpu") == 0
            assert fake_model.dtypes[-1] == want
            assert f"on cpu in {str(want).removeprefix('torch.')}" in capsys.readouterr().out


def test_progress_shows_on_a_terminal_only():
    import io

    from rich.console import Console

    from tilewave.cli.say import _progress

    for terminal, total in ((True, 3), (False, 3), (True, 1)):
        out = io.StringIO()
        with _progress(total, Console(file=out, force_terminal=terminal, width=80)) as advance:
            for _ in range(total):
                advance()
        assert bool(out.getvalue()) == (terminal and total > 1), (terminal, total, out.getvalue())
