"""The graphed generator: one item padded to its frame bucket, with its lengths, gives the unpadded result."""
import pytest
import torch

from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave.models.kokoro.model import GRAPH_BUCKET
from tilewave.spec.tolerance import scaled_max_error, tolerance


class EagerGraphs:
    """GraphCache's interface without CUDA: runs fn on the padded inputs (what a graph would record)."""

    def __init__(self):
        self.keys = []

    def run(self, key, fn, inputs):
        self.keys.append(key)
        return fn(*inputs)


@pytest.mark.parametrize("phonemes", [3, 40])
def test_the_bucket_padded_generator_gives_the_unpadded_spectrum(kokoro_cpu, phonemes):
    ids, ref_s = random_token_ids(phonemes, 7), voice_style(phonemes, "jf_alpha")
    f = kokoro_cpu.features(ids, ref_s)
    f["frames"] = [int(f["durations"].sum())]
    gen = torch.Generator().manual_seed(1)
    _, spec, audio = kokoro_cpu._generate(f, ref_s, [gen], None, torch.float32)
    kokoro_cpu.graphs = EagerGraphs()
    try:
        _, spec_b, audio_b = kokoro_cpu._generate(f, ref_s, [torch.Generator().manual_seed(1)], None, torch.float32)
        assert kokoro_cpu.graphs.keys and kokoro_cpu.graphs.keys[0][1] % GRAPH_BUCKET == 0
        assert kokoro_cpu.graphs.keys[0][1] > f["decoder"].shape[-1] or f["decoder"].shape[-1] % GRAPH_BUCKET == 0
    finally:
        kokoro_cpu.graphs = None
    assert spec_b.shape == spec.shape and audio_b[0].shape == audio[0].shape
    assert torch.isfinite(audio_b[0]).all()
    assert scaled_max_error(spec_b, spec) <= tolerance("float32", "reduction")
    assert scaled_max_error(audio_b[0], audio[0]) <= tolerance("float32", "reduction")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_on_a_gpu_a_graph_replay_gives_the_eager_audio_and_is_recorded_once_per_bucket(kokoro_weights):
    from tilewave.models.kokoro import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    ids, ref_s = random_token_ids(30, 3).cuda(), voice_style(30, "jf_alpha").cuda()
    eager = model(ids, ref_s, 1.0, torch.Generator("cuda").manual_seed(4))
    model.use_cuda_graphs(max_graphs=2)
    for _ in range(3):
        out = model(ids, ref_s, 1.0, torch.Generator("cuda").manual_seed(4))
        assert torch.equal(out.durations, eager.durations)
        assert scaled_max_error(out.audio, eager.audio) <= tolerance("float32", "reduction")
    assert model.graphs.captures == 1
