"""A stage's AdaIN1d style affines computed together (modules.style_affines, what a GPU runs): each module gets
the (scale, shift) its own product gives, every module is served from the stack, a changed parameter is seen, and
a batch's items keep their solo arithmetic. The CPU runs the per-module path by default; here the stacked path is
switched on for the CPU so that it runs where CI does."""
import pytest
import torch

from tests.models.conftest import own_copy
from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave.models.kokoro import modules as M
from tilewave.spec.tolerance import log_spectral_distance, scaled_max_error, tolerance


@pytest.fixture
def stacked_on_cpu(monkeypatch):
    monkeypatch.setattr(M, "AFFINES_STACKED_ON", ("cpu",))


def _own(module, s):
    gamma, beta = M.style_affine(module.fc, s)
    g = 1 + gamma
    return g * module.norm.weight, g * module.norm.bias + beta


@pytest.mark.parametrize("items", [1, 3])
def test_each_module_gets_its_own_products_from_the_stack(kokoro_cpu, stacked_on_cpu, items):
    gen = kokoro_cpu.decoder.generator
    s = torch.randn(items, 128, generator=torch.Generator().manual_seed(items))
    with M.style_affines(s, gen.noise_res, gen.resblocks):
        got_s, table = M._affines.get()
    assert got_s is s
    expected = [m for part in (gen.noise_res, gen.resblocks) for m in part.modules() if isinstance(m, M.AdaIN1d)]
    assert list(table) == expected and len(expected) == 48
    for m in expected:
        scale, shift = table[m]
        want_scale, want_shift = _own(m, s)
        assert scale.shape == want_scale.shape == (items, m.norm.weight.shape[0]) and scale.is_contiguous()
        assert shift.is_contiguous() and torch.isfinite(scale).all() and torch.isfinite(shift).all()
        assert scaled_max_error(scale, want_scale) <= tolerance("float32", "pointwise")
        assert scaled_max_error(shift, want_shift) <= tolerance("float32", "pointwise")
    assert M._affines.get() is None  # the table lives only inside the block


def test_the_stack_is_rebuilt_when_a_parameter_changes(kokoro_weights, stacked_on_cpu):
    dec = own_copy(kokoro_weights).decoder
    s = voice_style(20)[:, :128]
    with M.style_affines(s, dec.encode, dec.decode):
        first = M._affines.get()[1][dec.encode.norm1][1].clone()
    with torch.no_grad():
        dec.encode.norm1.norm.bias.add_(1.0)  # in place: the same storage, a new version
    with M.style_affines(s, dec.encode, dec.decode):
        moved = M._affines.get()[1][dec.encode.norm1][1]
    torch.testing.assert_close(moved, first + (1 + M.style_affine(dec.encode.norm1.fc, s)[0]))


def test_every_adain1d_of_a_forward_is_served_from_a_stack(kokoro_cpu, stacked_on_cpu, monkeypatch):
    # style_affine is what a module calls when the stack does not serve it: with the stack on, only the duration
    # encoder's AdaLayerNorms (3 of them, float32 products that decide durations: not stacked) call it
    calls = []
    real = M.style_affine
    monkeypatch.setattr(M, "style_affine", lambda fc, s: calls.append(fc) or real(fc, s))
    kokoro_cpu(random_token_ids(12, 1), voice_style(12), 1.0, torch.Generator().manual_seed(0))
    ada = [m.fc for m in kokoro_cpu.predictor.text_encoder.lstms if isinstance(m, M.AdaLayerNorm)]
    assert len(ada) == 3 and calls == ada


def test_a_forward_with_the_stack_says_what_the_per_module_forward_says(kokoro_cpu, monkeypatch):
    ids, ref_s = random_token_ids(40, 7), voice_style(40, "jm_kumo")
    own = kokoro_cpu(ids, ref_s, 1.0, torch.Generator().manual_seed(4))
    monkeypatch.setattr(M, "AFFINES_STACKED_ON", ("cpu",))
    stacked = kokoro_cpu(ids, ref_s, 1.0, torch.Generator().manual_seed(4))
    assert torch.equal(stacked.durations, own.durations)
    assert torch.isfinite(stacked.audio).all() and stacked.audio.shape == own.audio.shape
    assert log_spectral_distance(stacked.audio, own.audio) <= tolerance("float32", "spectral")


def test_with_the_stack_a_padded_batch_gives_each_item_its_solo_run(kokoro_cpu, stacked_on_cpu, monkeypatch):
    # the GPU's batch path (masked passes, the curves on the padded frames) with the stacked affines: each item's
    # rows are its own [1, 128] products, so its features are its solo run's to float32 rounding
    monkeypatch.setattr(kokoro_cpu, "_items_alone", lambda: False)
    items = [(30, "jm_kumo", 1.2), (5, "jf_alpha", 1.0), (17, "jf_nezumi", 0.9)]
    ids = [random_token_ids(n, 50 + k)[0] for k, (n, _, _) in enumerate(items)]
    ref_s = torch.cat([voice_style(n, v) for n, v, _ in items])
    speeds = [v for *_, v in items]
    feats = kokoro_cpu._features(ids, ref_s, speeds, None)
    for i in range(len(items)):
        solo = kokoro_cpu.features(ids[i][None], ref_s[i:i + 1], speeds[i])
        assert torch.equal(feats["durations"][i], solo["durations"])
        frames = int(solo["durations"].sum())
        for name, n in (("F0", 2 * frames), ("N", 2 * frames), ("decoder", 2 * frames)):
            got = feats[name][i:i + 1, ..., :n]
            assert torch.isfinite(got).all()
            assert scaled_max_error(got, solo[name]) <= tolerance("float32", "reduction"), name


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="the stacked affines' default device is a GPU")
def test_on_a_gpu_graphed_and_batched_forwards_with_the_stack_say_what_per_module_affines_say(kokoro_weights,
                                                                                            monkeypatch):
    # the GPU default (stacked) against each module's own products (AFFINES_STACKED_ON emptied), eager; then the
    # stacked forward replayed from graphs, and a padded batch of three (module-major tables, B > 1)
    from tilewave.engine.runner import KokoroRunner
    from tilewave.models.kokoro import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    items = [(60, "jm_kumo", 1.0), (9, "jf_alpha", 1.2), (33, "jf_nezumi", 0.9)]
    ids = [random_token_ids(n, 70 + k).cuda() for k, (n, _, _) in enumerate(items)]
    styles = [voice_style(n, v).cuda() for n, v, _ in items]

    def run(i, forward=model):
        return forward(ids[i], styles[i], items[i][2], torch.Generator("cuda").manual_seed(i))

    with monkeypatch.context() as m:
        m.setattr(M, "AFFINES_STACKED_ON", ())
        own = [run(i) for i in range(len(items))]
    stacked = [run(i) for i in range(len(items))]
    graphed_forward = KokoroRunner(model, cuda_graphs=True).forward
    graphed = [run(i, graphed_forward) for _ in range(2) for i in range(len(items))]  # recorded, replayed
    batch = model.forward_batch([t[0] for t in ids], torch.cat(styles), [v for *_, v in items],
                                [torch.Generator("cuda").manual_seed(i) for i in range(len(items))])
    for i in range(len(items)):
        for got in (stacked[i], graphed[i], graphed[i + len(items)], batch[i]):
            assert torch.equal(got.durations, own[i].durations)
            assert torch.isfinite(got.audio).all() and got.audio.shape == own[i].audio.shape
            assert log_spectral_distance(got.audio, own[i].audio) <= tolerance("float32", "spectral")
