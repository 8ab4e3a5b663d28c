"""The resblocks' two fusions. KokoroModel.time_major_inputs: the AdaINs before the resblocks' convs write the conv's
time-major input themselves (modules.norm_into_conv). KokoroModel.residual_epilogues: the residual sums (and
AdainResBlk1d's 1/sqrt(2)) in the last conv's epilogue. Each switch reaches every block, the 16-bit decoder copies
included; on a CPU neither changes a bit; on a Hopper GPU time-major inputs are bit-identical to the conv's own copy
and residual epilogues bit-identical in float32 storage, for a single from CUDA graphs and for a padded batch."""
import pytest
import torch

from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave import precision
from tilewave.models.kokoro.modules import RESIDUAL_EPILOGUES, TIME_MAJOR_INPUTS, AdaINResBlock1, AdainResBlk1d


def _flags(root, name="time_major_inputs"):
    return {getattr(m, name) for m in root.modules() if isinstance(m, (AdainResBlk1d, AdaINResBlock1))}


def test_the_switch_reaches_every_block_and_the_16bit_decoders(kokoro_cpu):
    model = kokoro_cpu
    assert _flags(model) == {TIME_MAJOR_INPUTS} and model.time_major_on == TIME_MAJOR_INPUTS
    try:
        before = model._decoder_in(torch.bfloat16)
        for on in (not TIME_MAJOR_INPUTS, TIME_MAJOR_INPUTS):
            model.time_major_inputs(on)
            assert _flags(model) == {on} and _flags(before) == {on} and model.time_major_on == on
        model.time_major_inputs(not TIME_MAJOR_INPUTS)
        model._decoders.clear()
        assert _flags(model._decoder_in(torch.bfloat16)) == {not TIME_MAJOR_INPUTS}, \
            "a copy made later takes the model's setting"
    finally:
        model.time_major_inputs(TIME_MAJOR_INPUTS)
        model._decoders.clear()
    assert _flags(model) == {TIME_MAJOR_INPUTS}


def test_on_a_cpu_the_switch_changes_nothing(kokoro_cpu):
    ids, style = random_token_ids(24, seed=5), voice_style(24)
    outs = {}
    try:
        for on in (False, True):
            kokoro_cpu.time_major_inputs(on)
            outs[on] = kokoro_cpu(ids, style, 1.0, generator=torch.Generator().manual_seed(0))
    finally:
        kokoro_cpu.time_major_inputs(TIME_MAJOR_INPUTS)
    assert torch.isfinite(outs[True].audio).all() and outs[True].audio.abs().max() > 1e-3
    assert torch.equal(outs[True].audio, outs[False].audio)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="the tap kernel's time-major input needs a GPU")
@pytest.mark.parametrize("mode,dtype", [("tf32x3", torch.bfloat16), ("tf32", torch.float32)])
def test_on_the_gpu_the_audio_is_bit_identical(kokoro_weights, mode, dtype):
    from tilewave.engine.runner import KokoroRunner
    from tilewave.models.kokoro.model import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    runner = KokoroRunner(model, cuda_graphs=True)
    lengths = (90, 41, 13)
    ids = [random_token_ids(n, seed=n).cuda() for n in lengths]  # [1, n + 2] each
    styles = torch.cat([voice_style(n).reshape(1, -1) for n in lengths]).cuda()
    single, batch = {}, {}
    with precision.scope(mode):
        for on in (False, True):
            model.time_major_inputs(on)
            single[on] = runner.forward(ids[0], styles[:1], 1.0, generator=torch.Generator("cuda").manual_seed(0),
                                        dtype=dtype).audio
            gens = [torch.Generator("cuda").manual_seed(i) for i in range(len(ids))]
            batch[on] = [o.audio for o in model.forward_batch([t[0] for t in ids], styles, [1.0] * 3, gens,
                                                              dtype=dtype)]
    assert torch.isfinite(single[True]).all() and single[True].abs().max() > 1e-3
    assert torch.equal(single[True], single[False]), "graphed single: not the conv copy's bits"
    for b, (on, off) in enumerate(zip(batch[True], batch[False])):
        assert torch.equal(on, off), f"padded batch item {b}: not the conv copy's bits"


def test_the_residual_switch_reaches_every_block_and_the_16bit_decoders(kokoro_cpu):
    model, name = kokoro_cpu, "residual_epilogue"
    assert _flags(model, name) == {RESIDUAL_EPILOGUES} and model.residual_epilogues_on == RESIDUAL_EPILOGUES
    try:
        before = model._decoder_in(torch.bfloat16)
        model.residual_epilogues(not RESIDUAL_EPILOGUES)
        assert _flags(model, name) == _flags(before, name) == {not RESIDUAL_EPILOGUES}
        assert model.fusions[2] == (not RESIDUAL_EPILOGUES)
        assert _flags(model) == {TIME_MAJOR_INPUTS}, "one switch leaves the other alone"
        model._decoders.clear()
        assert _flags(model._decoder_in(torch.bfloat16), name) == {not RESIDUAL_EPILOGUES}
    finally:
        model.residual_epilogues(RESIDUAL_EPILOGUES)
        model._decoders.clear()


def test_on_a_cpu_residual_epilogues_change_nothing(kokoro_cpu):
    ids, style = random_token_ids(24, seed=6), voice_style(24)
    outs = {}
    try:
        for on in (False, True):
            kokoro_cpu.residual_epilogues(on)
            outs[on] = kokoro_cpu(ids, style, 1.0, generator=torch.Generator().manual_seed(0))
    finally:
        kokoro_cpu.residual_epilogues(RESIDUAL_EPILOGUES)
    assert torch.isfinite(outs[True].audio).all() and outs[True].audio.abs().max() > 1e-3
    assert torch.equal(outs[True].audio, outs[False].audio)
    assert torch.equal(outs[True].durations, outs[False].durations)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="the conv kernels' epilogues run on a GPU")
@pytest.mark.parametrize("mode,dtype", [("tf32x3", torch.bfloat16), ("tf32", torch.float32)])
def test_on_the_gpu_residual_epilogues_keep_the_audio(kokoro_weights, mode, dtype):
    """float32 storage: the same bits (each sum rounds once either way); bfloat16: one rounding instead of three, so
    close to the unfused audio, and the durations (decided before the decoder) identical."""
    from tilewave.engine.runner import KokoroRunner
    from tilewave.models.kokoro.model import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    runner = KokoroRunner(model, cuda_graphs=True)
    lengths = (90, 41, 13)
    ids = [random_token_ids(n, seed=n).cuda() for n in lengths]
    styles = torch.cat([voice_style(n).reshape(1, -1) for n in lengths]).cuda()
    single, batch = {}, {}
    with precision.scope(mode):
        for on in (False, True):
            model.residual_epilogues(on)
            single[on] = runner.forward(ids[0], styles[:1], 1.0, generator=torch.Generator("cuda").manual_seed(0),
                                        dtype=dtype)
            gens = [torch.Generator("cuda").manual_seed(i) for i in range(len(ids))]
            batch[on] = model.forward_batch([t[0] for t in ids], styles, [1.0] * 3, gens, dtype=dtype)
    model.residual_epilogues(RESIDUAL_EPILOGUES)
    pairs = [(single[True], single[False])] + list(zip(batch[True], batch[False]))
    for b, (on, off) in enumerate(pairs):
        assert torch.isfinite(on.audio).all() and on.audio.abs().max() > 1e-3
        assert torch.equal(on.durations, off.durations), f"output {b}: durations changed"
        if dtype == torch.float32:
            assert torch.equal(on.audio, off.audio), f"output {b}: not the unfused bits"
        else:
            rel = (on.audio.float() - off.audio.float()).norm() / off.audio.float().norm()
            assert rel < 0.05, f"output {b}: relative distance {rel:.3g} from the unfused audio"
