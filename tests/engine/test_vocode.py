"""Vocoding in chunks equals one pass; batches equal single runs; the CLI's files and its errors."""
import argparse
import json

import numpy as np
import pytest
import soundfile
import torch

from tilewave.cli import vocode as cli_vocode
from tilewave.engine.vocode import Vocoder, vocode_file, vocode_mel, wav_to_mel
from tilewave.errors import InputError
from tilewave.spec.tolerance import tolerance
from tilewave.models.vocoders.bigvgan import BigVGAN, BigVGANConfig, random_state_dict

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
# a small BigVGAN (x32, 24 kHz mel settings scaled down) so that the receptive field and chunks stay short
H = dict(resblock="1", upsample_rates=[4, 4, 2], upsample_kernel_sizes=[8, 8, 4], upsample_initial_channel=16,
         resblock_kernel_sizes=[3, 7], resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5]], use_tanh_at_final=False,
         use_bias_at_final=False, activation="snakebeta", snake_logscale=True, num_mels=20, n_fft=128,
         hop_size=32, win_size=128, sampling_rate=8000, fmin=0, fmax=None)


@pytest.fixture(scope="module")
def model():
    return BigVGAN.random(BigVGANConfig.from_dict(H), seed=0)


def test_context_is_short_enough_to_test(model):
    assert 3 <= model.context_frames() <= 40


@pytest.mark.parametrize("device", DEVICES)
def test_chunked_equals_unchunked(model, device):
    m = BigVGAN(model.config, model.params, device=device)
    mel = torch.randn(2, 20, 150, generator=torch.Generator().manual_seed(1)) - 3
    whole = m(mel.to(device))[:, 0].cpu()
    assert whole.abs().max() > 1e-3
    tol = tolerance("float32", "pointwise") * whole.abs().max()
    for chunk in (5, 64, 149, 150, 1000):
        chunked = vocode_mel(m, mel, chunk_frames=chunk)
        assert chunked.shape == (2, 150 * 32)
        assert (chunked - whole).abs().max() <= tol, chunk


def test_batch_equals_single_runs(model):
    mel = torch.randn(3, 20, 40, generator=torch.Generator().manual_seed(2))
    batched = vocode_mel(model, mel, chunk_frames=16)
    for b in range(3):
        assert (vocode_mel(model, mel[b], chunk_frames=16)[0] - batched[b]).abs().max() <= 1e-6


def test_copy_synthesis_length_and_rate_check(model):
    wav = torch.rand(32 * 50 + 7) - 0.5
    mel = wav_to_mel(model, wav, 8000)
    assert mel.shape == (1, 20, 50)
    with pytest.raises(InputError, match="16000 Hz.*8000 Hz"):
        wav_to_mel(model, wav, 16000)


def test_bad_mels(model):
    with pytest.raises(InputError, match="NaN"):
        vocode_mel(model, torch.full((20, 5), float("nan")))
    with pytest.raises(InputError, match="at least one frame"):
        vocode_mel(model, torch.zeros(20, 0))


# ---------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------
def parse(*argv):
    parser = argparse.ArgumentParser(prog="tilewave")
    cli_vocode.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["vocode", *argv])


@pytest.fixture
def checkpoint(tmp_path):
    folder = tmp_path / "bigvgan_small"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(H))
    torch.save({"generator": random_state_dict(BigVGANConfig.from_dict(H), seed=3)}, folder / "bigvgan_generator.pt")
    return folder


def test_cli_without_checkpoint_says_how_to_get_one(tmp_path, capsys):
    wav = tmp_path / "in.wav"
    soundfile.write(wav, np.zeros(800, np.float32), 8000)
    assert cli_vocode.run(parse(str(wav), "-o", str(tmp_path / "out.wav"))) == 2
    err = capsys.readouterr().err
    assert "--checkpoint" in err and "bigvgan_generator.pt" in err and "config.json" in err
    assert not (tmp_path / "out.wav").exists()


def test_cli_copy_synthesis_and_mel_input(tmp_path, checkpoint):
    gen = np.random.default_rng(4)
    wav = tmp_path / "speech.wav"
    soundfile.write(wav, (gen.random(32 * 60 + 5) - 0.5).astype(np.float32), 8000)
    out = tmp_path / "out.wav"
    assert cli_vocode.run(parse(str(wav), "-o", str(out), "--checkpoint", str(checkpoint),
                                "--device", "cpu", "--chunk-frames", "16")) == 0
    audio, rate = soundfile.read(out)
    assert rate == 8000 and audio.shape == (32 * 60,) and np.abs(audio).max() > 0
    # the same audio as the engine gives without chunking, up to 16-bit rounding
    model = BigVGAN.from_checkpoint(checkpoint)
    expected = vocode_file(model, wav, chunk_frames=10_000)[0].numpy()
    assert np.abs(audio - expected).max() <= 1.5 / 32768
    # a batched mel .npy -> one file per item in the output folder
    mel = tmp_path / "mels.npy"
    np.save(mel, gen.standard_normal((2, 20, 9)).astype(np.float32))
    outdir = tmp_path / "outs"
    outdir.mkdir()
    assert cli_vocode.run(parse(str(mel), "-o", str(outdir), "--checkpoint", str(checkpoint), "--device", "cpu")) == 0
    assert sorted(p.name for p in outdir.iterdir()) == ["mels_0.wav", "mels_1.wav"]
    assert soundfile.read(outdir / "mels_1.wav")[0].shape == (9 * 32,)


def test_vocoder_profiles_and_counts_its_own_placements(tmp_path, checkpoint):
    """The Vocoder (what `tilewave vocode` runs, outside the Kokoro Session): its audio is vocode_file's, its
    profiler saw the stages and its placement report counts only its own ops."""
    mel = tmp_path / "mel.npy"
    np.save(mel, np.random.default_rng(7).standard_normal((20, 11)).astype(np.float32))
    vocoder = Vocoder(checkpoint, "cpu", profile=True)
    assert vocoder.placements() == []
    audio = vocoder.vocode_files([mel], chunk_frames=16)[0]
    expected = vocode_file(BigVGAN.from_checkpoint(checkpoint), mel, chunk_frames=16)
    assert audio.shape == expected.shape == (1, 11 * 32) and torch.isfinite(audio).all()
    assert torch.equal(audio, expected)
    assert vocoder.placements() and all(n > 0 for *_, n in vocoder.placements())
    assert vocoder.profiler.format("stage").strip()
    with pytest.raises(InputError, match="vocoder dtype"):
        Vocoder(checkpoint, "cpu", dtype="float64")


def test_cli_errors(tmp_path, checkpoint, capsys):
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((3,), np.int64))
    assert cli_vocode.run(parse(str(bad), "-o", str(tmp_path / "o.wav"), "--checkpoint", str(checkpoint))) == 2
    assert "float array" in capsys.readouterr().err
    assert cli_vocode.run(parse(str(tmp_path / "missing.wav"), "-o", str(tmp_path / "o.wav"),
                                "--checkpoint", str(checkpoint))) == 2
    assert "does not exist" in capsys.readouterr().err
    # an output name that is no audio format is refused before the model loads (a garbage checkpoint below)
    wav0 = tmp_path / "in0.wav"
    soundfile.write(wav0, np.zeros(800, np.float32), 8000)
    assert cli_vocode.run(parse(str(wav0), "-o", str(tmp_path / "o.txt"), "--checkpoint", str(tmp_path / "none"))) == 2
    assert ".txt is not an audio format" in capsys.readouterr().err and not (tmp_path / "o.txt").exists()
    (checkpoint / "bigvgan_generator.pt").write_bytes(b"garbage")
    wav = tmp_path / "in.wav"
    soundfile.write(wav, np.zeros(800, np.float32), 8000)
    assert cli_vocode.run(parse(str(wav), "-o", str(tmp_path / "o.wav"), "--checkpoint", str(checkpoint))) == 1
    assert "corrupt" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# recordings at another rate, with several channels
# ---------------------------------------------------------------------------------------------------
def test_a_stereo_recording_at_another_rate_is_mixed_and_resampled(tmp_path, model, caplog):
    rate_in, seconds = 22_050, 0.6  # the rate of espeak-ng and many datasets; the small checkpoint works at 8000 Hz
    t = np.arange(int(rate_in * seconds)) / rate_in
    gen = np.random.default_rng(5)
    left = 0.5 * np.sin(2 * np.pi * 440 * t) + 0.05 * gen.standard_normal(t.size)
    right = 0.5 * np.sin(2 * np.pi * 660 * t) + 0.05 * gen.standard_normal(t.size)
    wav = tmp_path / "stereo.wav"
    soundfile.write(wav, np.stack([left, right], axis=1).astype(np.float32), rate_in, subtype="FLOAT")
    with caplog.at_level("WARNING", logger="tilewave.vocode"):
        audio = vocode_file(model, wav)
    assert "mixed 2 channels to mono" in caplog.text and "from 22050 Hz to 8000 Hz" in caplog.text
    hop = model.config.hop_size
    assert audio.shape[0] == 1 and abs(audio.shape[1] - seconds * 8000) < hop  # same duration, whole frames
    assert torch.isfinite(audio).all() and audio.abs().max() > 1e-3
    # the mono mix and the rate change are what the mel is made from: a mix of the right spectrum
    from tilewave.engine.vocode import conform_wav

    mono = conform_wav(np.stack([left, right], axis=1).astype(np.float32), rate_in, 8000).numpy()
    spectrum = np.abs(np.fft.rfft(mono))
    freqs = np.fft.rfftfreq(mono.size, 1 / 8000)
    peaks = sorted(freqs[np.argsort(spectrum)[-2:]])
    assert abs(peaks[0] - 440) < 5 and abs(peaks[1] - 660) < 5


def test_a_recording_at_the_checkpoints_rate_is_left_alone(tmp_path, model, caplog):
    wav = tmp_path / "mono.wav"
    samples = (np.random.default_rng(6).random(32 * 40) - 0.5).astype(np.float32)
    soundfile.write(wav, samples, 8000, subtype="FLOAT")
    with caplog.at_level("WARNING", logger="tilewave.vocode"):
        audio = vocode_file(model, wav)
    assert caplog.text == "" and audio.shape == (1, 32 * 40)
    expected = vocode_mel(model, wav_to_mel(model, torch.from_numpy(samples), 8000))
    assert torch.equal(audio, expected)
