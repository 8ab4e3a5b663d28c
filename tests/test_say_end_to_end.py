"""`tilewave say` with the real Kokoro model and the installed int8 ONNX weights (on CUDA when present).

Needs tilewave.models.kokoro (the model branch) and tilewave.harness.timing (the lead's): both land on
main together with this file.
"""
import numpy as np
import soundfile
import torch

from tests.test_cli_say import say
from tilewave.engine import Session
from tilewave.text import EspeakPhonemizer

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TEXT = "Hello there. This is tilewave, speaking from a Triton engine."
MODEL_STAGES = ("albert", "duration", "f0_energy", "text_encoder", "decoder", "generator", "istft")


def test_say_writes_speech(tmp_path, capsys):
    out = tmp_path / "hello.wav"
    assert say(TEXT, "-o", str(out), "--device", DEVICE, "--seed", "0", "--profile") == 0
    printed = capsys.readouterr().out
    assert all(stage in printed for stage in MODEL_STAGES) and "ran on" in printed

    audio, rate = soundfile.read(out, dtype="float32")
    assert rate == 24_000 and audio.ndim == 1 and np.isfinite(audio).all()
    # Duration follows the text: English speech runs at roughly 10-25 phonemes a second.
    (phonemes,) = EspeakPhonemizer("en-us")([TEXT])
    seconds = audio.size / rate
    assert 0.04 * len(phonemes) < seconds < 0.15 * len(phonemes), (seconds, len(phonemes))
    # Speech-like energy: loud enough, with pauses and voiced stretches, not a constant tone or noise.
    frames = audio[: audio.size // 480 * 480].reshape(-1, 480)
    rms = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))
    assert 0.03 < rms.max() < 1.0
    assert 0.3 < (rms > 0.1 * rms.max()).mean() < 0.98
    assert rms.min() < 0.05 * rms.max()
    power = np.abs(np.fft.rfft(audio.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(audio.size, 1 / rate)
    assert power[(freqs > 80) & (freqs < 4000)].sum() > 0.7 * power.sum()


def test_chunk_audio_length_matches_the_durations():
    with Session(lang="en-us", voice="jf_alpha", device=DEVICE) as session:
        (chunk,) = session.submit("Good morning.", seed=1)
    assert abs(chunk.audio.size - int(chunk.durations.sum()) * 600) <= 600
    assert chunk.durations.shape == (len(chunk.phonemes) + 2,) and (chunk.durations >= 1).all()


def test_damaged_weights_are_one_line_and_no_file(tmp_path, capsys):
    bad = tmp_path / "kokoro.onnx"
    bad.write_bytes(b"\x08\x07" + bytes(range(256)) * 8)
    out = tmp_path / "out.wav"
    assert say("Hello.", "--weights", str(bad), "-o", str(out), "--device", DEVICE) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert not out.exists()
