"""KokoroModel against the official kokoro 0.9.4 KModel running the same (dequantized) weights.

Both draw the harmonic source's randomness from the same seed (torch.manual_seed for the official model,
a torch.Generator for ours). Stages up to the decoder must agree to 1e-4 relative and durations exactly.

The waveform is compared in two ways. (1) The generator on the same inputs (the official decoder features
and F0 curve): 1e-3 relative L2. (2) End to end: the harmonic source integrates F0 into a phase of
~10^4 rad and takes atan2 of STFT bins that are real up to rounding (phase +pi vs -pi), so an F0 that
differs by 1e-7 relative (float32 rounding of a different LSTM kernel) moves the waveform by ~0.4%
relative L2; that is the reference's own sensitivity, bounded here at 2e-2 (measured ~4e-3).
"""
import pytest
import torch

from tests.models.conftest import DEVICES
from tests.models.kokoro_reference import official_generator, official_stages, random_token_ids, voice_style
from tilewave.harness.references import official_kmodel
from tilewave.models.kokoro import KokoroModel
from tilewave.ops import spectral

PRE_GENERATOR = ("bert", "d_en", "d", "duration_logits", "en", "F0", "N", "asr", "decoder")


@pytest.fixture(scope="module", params=DEVICES)
def pair(request, kokoro_weights, official_pth):
    device = request.param
    ours = KokoroModel.from_weights(kokoro_weights, device)
    official = official_kmodel(official_pth, device)
    return device, ours, official


def _rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_official_loaded_our_weights(pair, official_pth):
    device, ours, official = pair
    state = official.state_dict()
    layout = torch.load(official_pth, weights_only=True)
    expected = {f"{part}.{k}" for part, sd in layout.items() for k in sd}
    assert set(state) == expected  # a strict load: KModel silently loads nothing when it fails
    for name in ("bert.embeddings.word_embeddings.weight", "predictor.lstm.weight_hh_l0_reverse",
                 "decoder.generator.m_source.l_linear.weight", "text_encoder.embedding.weight"):
        assert torch.equal(state[name], ours.state_dict()[name]), name
    # what KModel's weight_norm hook recomputes from (g, v) before each forward
    w = torch._weight_norm(state["decoder.generator.conv_post.weight_v"],
                           state["decoder.generator.conv_post.weight_g"], 0)
    torch.testing.assert_close(w, ours.decoder.generator.conv_post.weight, rtol=1e-5, atol=1e-7)


def _compare_generator(ours, official, ref, s_dec, seed, frames):
    """The generator alone on the official decoder features and F0 (a window of `frames` decoder frames)."""
    x, f0 = ref["decoder"][..., :frames], ref["F0"][..., :frames]
    torch.manual_seed(seed)
    want = official_generator(official, x, f0, s_dec)
    gen = ours.decoder.generator
    g = torch.Generator(device=x.device).manual_seed(seed)
    har = gen.source(f0, g)
    spec, _ = gen.spectrum(x, s_dec, har)
    audio = spectral.istft_exp_sin(spec, 20, 5)[0]
    # The harmonic source integrates phase to thousands of radians, which float32 rounds at ~ulp(phase): the
    # reference's own spectrum moves by ~2e-4 relative against a float64 integration (measured on the CPU,
    # RESULTS.md). On the CPU our PyTorch path repeats the reference's float32 operations in its order; the
    # CUDA kernel integrates the phase in float64, so there the bound is the reference's noise floor, not 1e-4.
    spec_bound, audio_bound = (1e-4, 1e-3) if x.device.type == "cpu" else (1e-3, 1e-2)
    assert _rel(har[:, :11], want["har"][:, :11]) < 1e-4  # source magnitudes (phases may flip by 2 pi)
    spec_err = _rel(spec, want["spectrum"])
    assert spec_err < spec_bound, f"generator spectrum relative L2 {spec_err:.2e}"
    err = _rel(audio, want["audio"])
    assert err < audio_bound, f"generator waveform relative L2 {err:.2e}"
    print(f"\n[{x.device.type}] generator alone: spectrum rel L2 {spec_err:.2e}, waveform rel L2 {err:.2e}")
    return err


@pytest.mark.parametrize("n_phonemes, seed, speed", [(24, 0, 1.0)])
def test_end_to_end_matches_official(pair, n_phonemes, seed, speed):
    device, ours, official = pair
    ids, ref_s = random_token_ids(n_phonemes, seed).to(device), voice_style(n_phonemes).to(device)
    torch.manual_seed(seed)
    want = official_stages(official, ids, ref_s, speed)
    got = ours(ids, ref_s, speed, generator=torch.Generator(device=device).manual_seed(seed),
               keep_intermediates=True)
    assert torch.equal(got.durations, want["durations"])
    for name in PRE_GENERATOR:
        assert got.intermediates[name].shape == want[name].shape, name
        assert _rel(got.intermediates[name], want[name]) < 1e-4, name
    assert got.audio.shape == want["audio"].shape == (int(want["durations"].sum()) * 600,)
    end_to_end = _rel(got.audio, want["audio"])
    assert end_to_end < 2e-2, f"end-to-end waveform relative L2 {end_to_end:.2e}"
    gen_only = _compare_generator(ours, official, want, ref_s[:, :128], seed, 40)
    print(f"\n[{device}] {n_phonemes} phonemes: waveform rel L2 end to end {end_to_end:.2e}, "
          f"generator on the same inputs {gen_only:.2e}")


@pytest.mark.parametrize("n_phonemes, seed, speed", [(410, 2, 1.0)])
def test_long_sequences_match_official(pair, n_phonemes, seed, speed):
    """Every stage before the generator on the whole utterance (ALBERT positions up to 412, long LSTMs);
    the generator on its first 40 frames (its work is local in time)."""
    device, ours, official = pair
    ids, ref_s = random_token_ids(n_phonemes, seed).to(device), voice_style(n_phonemes).to(device)
    want = official_stages(official, ids, ref_s, speed, generator=False)
    got = ours.features(ids, ref_s, speed)
    assert torch.equal(got["durations"], want["durations"])
    errs = {name: _rel(got[name], want[name]) for name in PRE_GENERATOR}
    assert max(errs.values()) < 1e-4, errs
    gen_only = _compare_generator(ours, official, want, ref_s[:, :128], seed, 40)
    print(f"\n[{device}] {n_phonemes} phonemes: worst stage {max(errs, key=errs.get)} "
          f"{max(errs.values()):.1e}, generator window {gen_only:.2e}")
