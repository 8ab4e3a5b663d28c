"""BigVGAN's log-mel front-end against the package's mel_spectrogram; the slaney filterbank against
transformers' librosa-compatible one (librosa itself is not installed)."""
import numpy as np
import pytest
import torch
from transformers.audio_utils import mel_filter_bank

from tilewave.harness.references import import_official_bigvgan as load_reference
from tilewave.errors import InputError
from tilewave.spec.tolerance import tolerance
from tilewave.models.vocoders.mel import hz_to_mel, log_mel, mel_to_hz, slaney_mel_filterbank

_, MELDATASET, _ = load_reference()


@pytest.mark.parametrize("sr,n_fft,n_mels,fmin,fmax", [(24000, 1024, 100, 0, None), (22050, 1024, 80, 0, 8000),
                                                       (44100, 2048, 128, 0, None), (16000, 400, 64, 55, 7600)])
def test_slaney_filterbank(sr, n_fft, n_mels, fmin, fmax):
    ours = slaney_mel_filterbank(sr, n_fft, n_mels, fmin, fmax)
    ref = mel_filter_bank(num_frequency_bins=1 + n_fft // 2, num_mel_filters=n_mels, min_frequency=fmin,
                          max_frequency=sr / 2 if fmax is None else fmax, sampling_rate=sr, norm="slaney",
                          mel_scale="slaney").T
    assert ours.shape == (n_mels, 1 + n_fft // 2)
    assert np.abs(ours - ref).max() <= 1e-6 * np.abs(ref).max()
    assert (ours.sum(axis=1) > 0).all(), "an empty mel band"


def test_mel_scale_round_trip_and_knee():
    f = np.array([0.0, 200.0, 999.0, 1000.0, 4000.0, 11025.0])
    assert np.allclose(mel_to_hz(hz_to_mel(f)), f)
    assert hz_to_mel(1000.0) == pytest.approx(15.0) and hz_to_mel(200.0) == pytest.approx(3.0)


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
@pytest.mark.parametrize("sr,n_fft,hop,win,n_mels,fmax", [(24000, 1024, 256, 1024, 100, None),
                                                          (22050, 1024, 256, 1024, 80, 8000),
                                                          (16000, 512, 128, 400, 64, None)])
def test_log_mel_matches_bigvgan(device, sr, n_fft, hop, win, n_mels, fmax):
    gen = torch.Generator().manual_seed(0)
    t = torch.arange(hop * 37) / sr
    wav = torch.stack([0.5 * torch.sin(2 * torch.pi * 440 * t), torch.rand(hop * 37, generator=gen) * 1.6 - 0.8])
    expected = MELDATASET.mel_spectrogram(wav, n_fft, n_mels, sr, hop, win, 0, fmax)
    ours = log_mel(wav.to(device), sampling_rate=sr, n_fft=n_fft, num_mels=n_mels, hop_size=hop, win_size=win,
                   fmin=0, fmax=fmax)
    assert ours.shape == expected.shape == (2, n_mels, 37)
    assert (ours.cpu() - expected).abs().max() <= tolerance("float32", "reduction") * expected.abs().max()


def test_too_short_audio_is_an_input_error():
    with pytest.raises(InputError, match="too short"):
        log_mel(torch.zeros(100), sampling_rate=24000, n_fft=1024, num_mels=100, hop_size=256, win_size=1024)
