"""Kokoro in bfloat16 (PyTorch path, real weights) and the precision policy of the duration stages:
bfloat16 keeps float32's durations and sounds like float32, its weights are made once and leave float32 runs
bit for bit as they were, a padded bfloat16 batch is its items' solo runs, and no precision mode reaches the
stages that decide the durations with products coarser than float32-class."""
import contextlib
import sys

import pytest
import torch

from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave import precision
from tilewave.errors import InputError
from tilewave.ops import attention, conv, rnn
from tilewave.spec.tolerance import log_spectral_distance, tolerance

SPECTRAL_TOL = tolerance("bfloat16", "spectral")


def _run(model, n_phonemes, seed, dtype, voice="jf_alpha"):
    return model(random_token_ids(n_phonemes, seed), voice_style(n_phonemes, voice),
                 generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.fixture(scope="module")
def float32_then_bfloat16(kokoro_cpu):
    """Float32, then bfloat16, then float32 again, on one model (10 phonemes, seeded)."""
    first = _run(kokoro_cpu, 10, 7, torch.float32)
    half = _run(kokoro_cpu, 10, 7, torch.bfloat16)
    made = kokoro_cpu._decoder_in(torch.bfloat16)
    last = _run(kokoro_cpu, 10, 7, torch.float32)
    return first, half, last, made


def test_bfloat16_keeps_float32s_durations_and_sounds_like_it(float32_then_bfloat16):
    first, half, *_ = float32_then_bfloat16
    assert torch.equal(half.durations, first.durations)
    assert half.audio.dtype == torch.float32 and half.audio.shape == first.audio.shape
    assert torch.isfinite(half.audio).all() and half.audio.abs().max() > 0.01
    distance = log_spectral_distance(half.audio, first.audio)
    print(f"\nbfloat16 vs float32: log-spectral distance {distance:.4f} (bound {SPECTRAL_TOL})")
    assert 0 < distance <= SPECTRAL_TOL  # 0 would mean bfloat16 never ran


def test_the_bfloat16_weights_are_made_once_and_float32_runs_are_unchanged(kokoro_cpu, float32_then_bfloat16):
    first, half, last, made = float32_then_bfloat16
    assert torch.equal(last.audio, first.audio) and torch.equal(last.durations, first.durations)
    assert kokoro_cpu._decoder_in(torch.bfloat16) is made and list(kokoro_cpu._decoders) == [(torch.bfloat16,
                                                                                               kokoro_cpu.device)]
    ref = kokoro_cpu.decoder
    assert made.encode.conv1.weight.dtype == made.generator.resblocks[0].convs1[0].weight.dtype == torch.bfloat16
    assert ref.encode.conv1.weight.dtype == torch.float32  # the model's own decoder is not cast
    # the parameters that stay float32 are shared, not copied
    for kept, own in ((made.generator.conv_post.weight, ref.generator.conv_post.weight),
                      (made.encode.norm1.fc.weight, ref.encode.norm1.fc.weight),
                      (made.generator.resblocks[0].alpha1[0], ref.generator.resblocks[0].alpha1[0])):
        assert kept.dtype == torch.float32 and kept.data_ptr() == own.data_ptr()


def test_the_bfloat16_decoder_made_in_a_sessions_inference_mode_has_ordinary_weights(kokoro_cpu):
    # a Session runs its calls in inference mode; weights made there are inference tensors, without the version
    # counter the GPU conv kernels' packed-weight cache reads (every bfloat16 session failed on the H200, S14b)
    saved = dict(kokoro_cpu._decoders)
    kokoro_cpu._decoders.clear()
    try:
        with torch.inference_mode():
            made = kokoro_cpu._decoder_in(torch.bfloat16)
        cast = made.generator.resblocks[0].convs1[0].weight
        assert cast.dtype == torch.bfloat16 and not cast.is_inference()
        assert not any(p.is_inference() for p in made.parameters())
        assert all(isinstance(p._version, int) for p in made.parameters())
    finally:
        kokoro_cpu._decoders.clear()
        kokoro_cpu._decoders.update(saved)


def test_a_padded_bfloat16_batch_gives_each_item_its_solo_bfloat16_run(kokoro_cpu):
    items = [(7, "jm_kumo", 1.2, 21), (2, "jf_alpha", 1.0, 22)]
    ids = [random_token_ids(n, seed)[0] for n, _, _, seed in items]
    ref_s = torch.cat([voice_style(n, v) for n, v, _, _ in items])
    outs = kokoro_cpu.forward_batch(ids, ref_s, [s for _, _, s, _ in items],
                                    [torch.Generator().manual_seed(seed) for *_, seed in items],
                                    dtype=torch.bfloat16)
    for i, (n, voice, speed, seed) in enumerate(items):
        solo = kokoro_cpu(ids[i][None], ref_s[i:i + 1], speed, torch.Generator().manual_seed(seed),
                          dtype=torch.bfloat16)
        assert torch.equal(outs[i].durations, solo.durations)
        assert outs[i].audio.shape == solo.audio.shape and outs[i].audio.dtype == torch.float32
        distance = log_spectral_distance(outs[i].audio, solo.audio)
        print(f"\nitem of {n} phonemes: padded bfloat16 vs solo bfloat16, log-spectral distance {distance:.4f}")
        assert distance <= SPECTRAL_TOL


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64, "bfloat16"])
def test_an_unsupported_dtype_is_refused_naming_the_choices(kokoro_cpu, dtype):
    with pytest.raises(InputError, match="is not one of torch.float32, torch.bfloat16"):
        kokoro_cpu(random_token_ids(3, 1), voice_style(3), dtype=dtype)
    with pytest.raises(InputError, match="is not one of torch.float32, torch.bfloat16"):
        kokoro_cpu.forward_batch([random_token_ids(3, 1)[0]], voice_style(3), [1.0], [None], dtype=dtype)


class _StageRecorder:
    """A profile that knows the stage running, and the precision each patched op saw in it."""

    def __init__(self):
        self.name, self.seen = None, []

    @contextlib.contextmanager
    def stage(self, name):
        self.name = name
        yield

    def wrap(self, monkeypatch, module, op):
        original = getattr(module, op)

        def recorded(*args, **kwargs):
            self.seen.append((self.name, op, precision.current()))
            return original(*args, **kwargs)
        monkeypatch.setattr(module, op, recorded)


@pytest.mark.parametrize("asked, duration_stages", [("tf32", "tf32x3"), ("ieee", "ieee")])
def test_the_duration_stages_run_float32_class_products_in_every_mode(kokoro_cpu, monkeypatch, asked,
                                                                      duration_stages):
    rec = _StageRecorder()
    for module, op in ((attention, "sdpa_bidirectional"), (rnn, "lstm"), (conv, "conv1d")):
        rec.wrap(monkeypatch, module, op)
    with precision.scope(asked):
        kokoro_cpu.features(random_token_ids(3, 2), voice_style(3), profile=rec)  # the stages up to the generator
        assert precision.current() == asked  # restored after the duration stages
    by_stage = {}
    for stage, op, mode in rec.seen:
        by_stage.setdefault(stage, set()).add((op, mode))
    # ALBERT's attention and the duration encoder's and predictor's LSTMs decide the durations
    assert by_stage["albert"] == {("sdpa_bidirectional", duration_stages)}
    assert by_stage["duration"] == {("lstm", duration_stages)}
    # everything after them keeps the mode asked for
    for stage in ("f0_energy", "text_encoder", "decoder"):
        assert {mode for _, mode in by_stage[stage]} == {asked}, stage


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_PAGEOUT) is Linux's")
def test_the_float32_weights_bfloat16_replaces_are_handed_back_and_every_run_is_unchanged(kokoro_cpu,
                                                                                          float32_then_bfloat16):
    from tilewave.engine.host_memory import page_out

    first, half, _, made = float32_then_bfloat16
    replaced = kokoro_cpu.replaced_weights(torch.bfloat16)
    ref = kokoro_cpu.decoder
    ptrs = {p.data_ptr() for p in replaced}
    assert ref.encode.conv1.weight.data_ptr() in ptrs and ref.generator.resblocks[0].convs1[0].weight.data_ptr() in ptrs
    assert ref.generator.conv_post.weight.data_ptr() not in ptrs  # conv_post runs float32 in both
    assert all(p.dtype == torch.float32 for p in replaced) and kokoro_cpu.replaced_weights(torch.float32) == []
    assert sum(p.numel() for p in replaced) > 40e6  # most of the decoder's 53 M parameters
    assert page_out(replaced) > 100e6
    again = _run(kokoro_cpu, 10, 7, torch.float32)  # the float32 weights read back from where they came from
    assert torch.equal(again.audio, first.audio) and torch.equal(again.durations, first.durations)
    assert torch.equal(_run(kokoro_cpu, 10, 7, torch.bfloat16).audio, half.audio)
    assert kokoro_cpu._decoder_in(torch.bfloat16) is made
