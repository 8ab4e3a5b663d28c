"""KokoroModel.forward_batch: every item of a batch gives its solo forward's durations and audio."""
import pytest
import torch

from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave.errors import InputError
from tilewave.models.kokoro.model import PAD_MULTIPLE
from tilewave.spec.tolerance import scaled_max_error, tolerance

# (phonemes, voice, speed, seed): very different lengths, voices, speeds and seeds; the longest first
ITEMS = [(24, "jm_kumo", 1.3, 12), (1, "jf_alpha", 1.0, 11), (4, "jf_nezumi", 0.8, 13), (11, "jf_alpha", 1.0, 14)]
AUDIO_TOL = tolerance("float32", "reduction")


def _batch(items):
    ids = [random_token_ids(n, 100 + k)[0] for k, (n, _, _, _) in enumerate(items)]
    ref_s = torch.cat([voice_style(n, v) for n, v, _, _ in items])
    return ids, ref_s, [s for _, _, s, _ in items]


def _assert_matches_solo(out, solo):
    assert torch.equal(out.durations, solo.durations)
    assert out.audio.shape == solo.audio.shape
    assert torch.isfinite(out.audio).all()
    err = scaled_max_error(out.audio, solo.audio)
    print(f"\nitem of {out.durations.shape[0] - 2} phonemes, {out.audio.shape[0]} samples: "
          f"max audio difference batch vs solo {err:.2e}")
    assert err <= AUDIO_TOL


@pytest.fixture(scope="module")
def batch_and_solos(kokoro_cpu):
    ids, ref_s, speeds = _batch(ITEMS)
    gens = [torch.Generator().manual_seed(seed) for *_, seed in ITEMS]
    outs = kokoro_cpu.forward_batch(ids, ref_s, speeds, gens)
    solos = [kokoro_cpu(ids[i][None], ref_s[i:i + 1], speeds[i], torch.Generator().manual_seed(seed))
             for i, (*_, seed) in enumerate(ITEMS)]
    return ids, outs, solos


@pytest.mark.parametrize("i", range(len(ITEMS)))
def test_each_item_of_a_batch_is_its_solo_run(batch_and_solos, i):
    ids, outs, solos = batch_and_solos
    assert len(outs) == len(ITEMS) and outs[i].durations.shape == ids[i].shape
    _assert_matches_solo(outs[i], solos[i])


def test_items_sharing_a_generator_draw_in_index_order(kokoro_cpu):
    # one request's consecutive chunks in one batch: the same generator object, twice
    ids, ref_s, speeds = _batch(ITEMS[2:4])
    outs = kokoro_cpu.forward_batch(ids, ref_s, speeds, [torch.Generator().manual_seed(5)] * 2)
    g = torch.Generator().manual_seed(5)
    for i, out in enumerate(outs):
        _assert_matches_solo(out, kokoro_cpu(ids[i][None], ref_s[i:i + 1], speeds[i], g))


def test_a_batch_of_one_is_bit_identical_to_forward(kokoro_cpu):
    ids, ref_s, speeds = _batch(ITEMS[3:4])
    out, = kokoro_cpu.forward_batch(ids, ref_s, speeds, [torch.Generator().manual_seed(3)])
    solo = kokoro_cpu(ids[0][None], ref_s, speeds[0], torch.Generator().manual_seed(3))
    assert torch.equal(out.durations, solo.durations) and torch.equal(out.audio, solo.audio)


def test_a_long_item_beside_a_one_phoneme_item_keeps_its_durations_and_curves(kokoro_cpu):
    # 508 phonemes (the model's longest input) and 1: everything before the generator, which is where
    # lengths matter (ALBERT positions, LSTMs over hundreds of tokens and thousands of frames)
    items = [(508, "jf_gongitsune", 1.1, 0), (1, "jm_kumo", 1.0, 0)]
    ids, ref_s, speeds = _batch(items)
    batch = kokoro_cpu._features(ids, ref_s, speeds, None)
    for i in range(2):
        solo = kokoro_cpu.features(ids[i][None], ref_s[i:i + 1], speeds[i])
        assert torch.equal(batch["durations"][i], solo["durations"])
        frames = int(solo["durations"].sum())
        for name, n in (("F0", 2 * frames), ("N", 2 * frames), ("decoder", 2 * frames)):
            got = batch[name][i:i + 1, ..., :n]
            assert torch.isfinite(got).all()
            assert scaled_max_error(got, solo[name]) <= tolerance("float32", "reduction"), name


def test_the_masked_batch_a_gpu_runs_gives_each_item_its_solo_durations_and_curves(kokoro_cpu, monkeypatch):
    # What a GPU batch does (KokoroModel._items_alone() is False there): ALBERT as one pass with a key-padding
    # mask, the F0/energy curves' blocks on the padded frames with their lengths. On this CPU the padded GEMMs
    # round differently from a solo run's, so the comparison is to float32 rounding, not bit for bit; what
    # must hold exactly is the durations, and the padding must not leak into any item (zeros past its end).
    from tilewave.spec.tolerance import log_spectral_distance

    monkeypatch.setattr(kokoro_cpu, "_items_alone", lambda: False)
    items = ITEMS + [(96, "jm_kumo", 0.9, 15)]
    ids, ref_s, speeds = _batch(items)
    feats = kokoro_cpu._features(ids, ref_s, speeds, None)
    # both padded axes rounded up past the longest item (which then has padding of its own to keep clean)
    longest = max(int(kokoro_cpu.features(x[None], ref_s[i:i + 1], speeds[i])["durations"].sum())
                  for i, x in enumerate(ids))
    assert feats["d_en"].shape[1] == -(-max(n + 2 for n, *_ in items) // PAD_MULTIPLE) * PAD_MULTIPLE
    assert feats["asr"].shape[-1] == -(-longest // PAD_MULTIPLE) * PAD_MULTIPLE
    outs = kokoro_cpu.forward_batch(ids, ref_s, speeds, [torch.Generator().manual_seed(s) for *_, s in items])
    for i, (n, _, _, seed) in enumerate(items):
        solo = kokoro_cpu.features(ids[i][None], ref_s[i:i + 1], speeds[i])
        assert torch.equal(feats["durations"][i], solo["durations"])
        tokens, frames = n + 2, int(solo["durations"].sum())
        assert scaled_max_error(feats["d_en"][i:i + 1, :tokens], solo["d_en"]) <= tolerance("float32", "reduction")
        assert not feats["d_en"][i, tokens:].any() and not feats["bert"][i, tokens:].any()
        for name in ("F0", "N"):
            got = feats[name][i:i + 1]
            assert torch.isfinite(got).all() and not got[:, 2 * frames:].any(), name
            assert scaled_max_error(got[:, :2 * frames], solo[name]) <= tolerance("float32", "reduction"), name
        alone = kokoro_cpu(ids[i][None], ref_s[i:i + 1], speeds[i], torch.Generator().manual_seed(seed))
        assert torch.equal(outs[i].durations, alone.durations) and outs[i].audio.shape == alone.audio.shape
        assert log_spectral_distance(outs[i].audio, alone.audio) <= tolerance("float32", "spectral")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="the CUDA batch path (Triton kernels) needs a GPU")
def test_on_a_gpu_each_item_of_a_padded_batch_says_what_its_solo_run_says(kokoro_weights):
    # On a GPU a batch runs ALBERT as one masked pass and the F0/energy curves on the padded frames (cuBLAS's
    # GEMMs may round a padded batch differently from a solo run), its LSTMs as one dot per step where a solo run
    # steps its row alone (both float32-class, rounding apart); the harmonic source's phase integral turns
    # rounding-level F0 differences into waveform differences of up to ~1e-2 (H200, 2026-12-02): so the same
    # durations, the same F0 to float32 rounding, the same spectrum within the float32 spectral bound.
    from tilewave.models.kokoro import KokoroModel
    from tilewave.spec.tolerance import log_spectral_distance

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    ids, ref_s, speeds = _batch(ITEMS)
    ids, ref_s = [t.cuda() for t in ids], ref_s.cuda()
    outs = model.forward_batch(ids, ref_s, speeds, [torch.Generator("cuda").manual_seed(s) for *_, s in ITEMS])
    feats = model._features(ids, ref_s, speeds, None)
    for i, (*_, seed) in enumerate(ITEMS):
        solo = model(ids[i][None], ref_s[i:i + 1], speeds[i], torch.Generator("cuda").manual_seed(seed))
        f0 = model.features(ids[i][None], ref_s[i:i + 1], speeds[i])["F0"]
        assert torch.equal(outs[i].durations, solo.durations)
        assert torch.isfinite(outs[i].audio).all() and outs[i].audio.shape == solo.audio.shape
        assert scaled_max_error(feats["F0"][i:i + 1, :f0.shape[-1]], f0) <= tolerance("float32", "reduction")
        assert log_spectral_distance(outs[i].audio, solo.audio) <= tolerance("float32", "spectral")


@pytest.mark.parametrize("change, match", [
    (lambda a: dict(a, ref_s=a["ref_s"][:1]), "ref_s must be"),
    (lambda a: dict(a, speeds=a["speeds"][:1]), "speeds must have"),
    (lambda a: dict(a, generators=[None]), "generators must have"),
    (lambda a: dict(a, input_ids=[a["input_ids"][0][None], a["input_ids"][1]]), r"input_ids\[0\]"),
    (lambda a: dict(a, input_ids=[]), "non-empty list"),
    (lambda a: dict(a, speeds=[1.0, 0.0]), "speed must be"),
])
def test_bad_batches_are_refused_with_the_value(kokoro_cpu, change, match):
    ids, ref_s, speeds = _batch(ITEMS[:2])
    args = {"input_ids": ids, "ref_s": ref_s, "speeds": speeds, "generators": [None, None]}
    with pytest.raises(InputError, match=match):
        kokoro_cpu.forward_batch(**change(args))


def test_with_graphs_a_small_batch_runs_as_its_items_graphed_forwards(kokoro_cpu, monkeypatch):
    # an eager padded pass is host-bound at a few items; graphed singles ran 2 items 2.2x faster (RESULTS S16b)
    from tilewave.engine.runner import KokoroRunner

    cuda = torch.device("cuda")
    monkeypatch.setattr(type(kokoro_cpu), "device", property(lambda self: cuda))
    runner = KokoroRunner(kokoro_cpu)
    least = runner.policy.padded_min
    choices = {}
    for graphed in (False, True):
        runner.graphs = object() if graphed else None
        choices[graphed] = [runner._runs_padded(n, None) for n in range(1, 2 * least)]
    assert least > 2
    assert choices[False] == [True] * (2 * least - 1)
    assert choices[True] == [n >= least for n in range(1, 2 * least)]
    assert runner._runs_padded(2, True) and not runner._runs_padded(9, False)  # as asked, always


def test_on_the_cpu_a_runner_runs_a_batch_as_its_items_one_after_another_by_default(kokoro_cpu):
    from tilewave.engine.runner import KokoroRunner

    ids, ref_s, speeds = _batch(ITEMS[:2])
    gens = [torch.Generator().manual_seed(seed) for *_, seed in ITEMS[:2]]
    outs = KokoroRunner(kokoro_cpu).forward_batch(ids, ref_s, speeds, gens)
    for i, (*_, seed) in enumerate(ITEMS[:2]):
        solo = kokoro_cpu(ids[i][None], ref_s[i:i + 1], speeds[i], torch.Generator().manual_seed(seed))
        assert torch.equal(outs[i].durations, solo.durations) and torch.equal(outs[i].audio, solo.audio)
