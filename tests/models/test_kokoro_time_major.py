"""KokoroModel.time_major_inputs: the AdaINs before the resblocks' convs write the conv's time-major input themselves
(modules.norm_into_conv). The switch reaches every block, the 16-bit decoder copies included; on a CPU (no tap
kernel with tensor descriptors) it changes nothing; on a Hopper GPU the audio is bit-identical to the conv's own
copy, for a single from CUDA graphs and for a padded batch."""
import pytest
import torch

from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave import precision
from tilewave.models.kokoro.modules import TIME_MAJOR_INPUTS, AdaINResBlock1, AdainResBlk1d


def _flags(root):
    return {m.time_major_inputs for m in root.modules() if isinstance(m, (AdainResBlk1d, AdaINResBlock1))}


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
