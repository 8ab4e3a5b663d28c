"""Graphed single utterances: the token stages, the frame stages and the generator, each run on its bucket's padded
inputs with the lengths, give the unpadded result."""
import pytest
import torch

from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave.engine.policy import BatchPolicy
from tilewave.engine.runner import KokoroRunner
from tilewave.spec.tolerance import log_spectral_distance, scaled_max_error, tolerance

POLICY = BatchPolicy()
GRAPH_BUCKET, GRAPH_MAX_FRAMES, TOKEN_BUCKET = POLICY.frame_bucket, POLICY.max_frames, POLICY.token_bucket


class EagerGraphs:
    """GraphCache's interface without CUDA: runs fn on the padded inputs (what a graph would record)."""

    def __init__(self):
        self.keys = []

    def run(self, key, fn, inputs, record_after=0):
        self.keys.append(key)
        return fn(*inputs)


class ShapeCheckingGraphs(EagerGraphs):
    """EagerGraphs that holds each key to the input shapes and dtypes it first ran with, as a recorded graph does."""

    def __init__(self):
        super().__init__()
        self.inputs = {}

    def run(self, key, fn, inputs, record_after=0):
        shapes = [(tuple(t.shape), t.dtype) for t in inputs]
        assert self.inputs.setdefault(key, shapes) == shapes, f"graph {key} replayed with other input shapes"
        return super().run(key, fn, inputs)


def test_items_of_one_frame_bucket_and_two_token_buckets_replay_graphs_of_their_own_shapes(kokoro_cpu):
    # 30 and 31 phonemes (32 and 33 tokens: token buckets 32 and 64) said in the same number of frames: the frame
    # stages' inputs are token-bucket long, so each needs its own graph (S13b: one key for both failed on the GPU)
    runner = KokoroRunner(kokoro_cpu)
    runner.graphs = ShapeCheckingGraphs()
    for phonemes in (30, 31, 30):
        ids, ref_s = random_token_ids(phonemes, phonemes), voice_style(phonemes, "jf_alpha")
        durations = torch.zeros(phonemes + 2, dtype=torch.long)
        durations[1:phonemes + 1] = 2
        durations[1:1 + 64 - 2 * phonemes] += 1  # 64 frames either way
        runner.features(ids, ref_s, durations=durations)
    frame_keys = [k for k in runner.graphs.keys if k[0] == "frames"]
    assert len(frame_keys) == 3 and frame_keys[0][1] == frame_keys[1][1] and len(set(frame_keys)) == 2


def test_graphs_belong_to_a_runner_so_a_session_without_them_never_replays_another_runners(kokoro_cpu):
    from tilewave.engine import Session

    runner = KokoroRunner(kokoro_cpu)
    runner.graphs = EagerGraphs()  # as a GPU session's runner with graphs, on the shared model
    ids, ref_s = random_token_ids(12, 4), voice_style(12, "jf_alpha")
    runner.features(ids, ref_s)
    assert runner.graphs.keys  # the runner replays graphs ...
    runner.graphs.keys.clear()
    kokoro_cpu(ids, ref_s, 1.0, torch.Generator().manual_seed(0))
    with Session(device="cpu", model=kokoro_cpu, cuda_graphs=False) as session:
        session.speak("Hello.", seed=1)
        assert session.runner.graphs is None and session.runner.model is kokoro_cpu
    assert runner.graphs.keys == []  # ... but not the model alone, nor a session made without them


def test_a_graph_refuses_inputs_of_other_shapes_than_it_recorded():
    from tilewave.ops.graphs import GraphCache

    cache = GraphCache(2)
    cache._graphs["k"] = (None, (torch.zeros(1, 96, 4),), (), 0)  # recorded at 96: a replay would copy_ into it
    for wrong in (torch.zeros(1, 128, 4), torch.zeros(1, 1, 4), torch.zeros(1, 96, 4, dtype=torch.float64)):
        with pytest.raises(ValueError, match="recorded with input 0"):
            cache.run("k", None, (wrong,))


@pytest.mark.parametrize("phonemes", [3, 40])
def test_the_bucket_padded_generator_gives_the_unpadded_spectrum(kokoro_cpu, phonemes):
    ids, ref_s = random_token_ids(phonemes, 7), voice_style(phonemes, "jf_alpha")
    f = kokoro_cpu.features(ids, ref_s)
    f["frames"] = [int(f["durations"].sum())]
    gen = torch.Generator().manual_seed(1)
    _, spec, audio = kokoro_cpu._generate(f, ref_s, [gen], None, torch.float32)
    runner = KokoroRunner(kokoro_cpu)
    runner.graphs = EagerGraphs()
    _, spec_b, audio_b = runner._generate(f, ref_s, [torch.Generator().manual_seed(1)], None, torch.float32)
    assert runner.graphs.keys and runner.graphs.keys[0][1] % GRAPH_BUCKET == 0
    assert runner.graphs.keys[0][1] > f["decoder"].shape[-1] or f["decoder"].shape[-1] % GRAPH_BUCKET == 0
    assert spec_b.shape == spec.shape and audio_b[0].shape == audio[0].shape
    assert torch.isfinite(audio_b[0]).all()
    assert scaled_max_error(spec_b, spec) <= tolerance("float32", "reduction")
    assert scaled_max_error(audio_b[0], audio[0]) <= tolerance("float32", "reduction")


@pytest.mark.parametrize("phonemes, speed, given", [(5, 1.0, False), (61, 0.5, False), (40, 1.0, True)])
def test_the_bucket_padded_stages_before_the_generator_give_the_unpadded_features(kokoro_cpu, phonemes, speed,
                                                                                 given):
    # What a graphed single item runs (EagerGraphs records the padded calls a GPU records once and replays): the
    # token stages on ids padded to their bucket, the one read-back, the frame stages on frames padded to theirs.
    # The masked passes round like a padded batch's on this CPU (its GEMMs pick paths by shape), so the features
    # match to float32 rounding; the durations exactly, and the padding reaches nothing. speed 0.5: a reciprocal
    # that is exact, so the graph's multiply is forward's divide on every device (the CUDA test covers 1.3)
    ids, ref_s = random_token_ids(phonemes, 11), voice_style(phonemes, "jm_kumo")
    durations = torch.randint(0, 4, (phonemes + 2,), generator=torch.Generator().manual_seed(2)) if given else None
    if given:
        durations[1] = 3  # not all zero
    solo = kokoro_cpu.features(ids, ref_s, speed, durations=durations)
    runner = KokoroRunner(kokoro_cpu)
    runner.graphs = EagerGraphs()
    got = runner.features(ids, ref_s, speed, durations=durations)
    keys = runner.graphs.keys
    frames = int(solo["durations"].sum())
    assert [k[:2] for k in keys] == [("tokens", -(-(phonemes + 2) // TOKEN_BUCKET) * TOKEN_BUCKET),
                                     ("frames", -(-2 * frames // GRAPH_BUCKET) * GRAPH_BUCKET // 2)]
    assert torch.equal(got["durations"], solo["durations"])
    for name in ("bert", "d_en", "d", "duration_logits", "en", "F0", "N", "asr", "decoder"):
        assert got[name].shape == solo[name].shape, name
        assert scaled_max_error(got[name], solo[name]) <= tolerance("float32", "reduction"), name


def test_a_graphed_item_past_the_frame_graphs_runs_its_frame_stages_eagerly(kokoro_cpu):
    ids, ref_s = random_token_ids(20, 5), voice_style(20, "jm_kumo")
    durations = torch.full((22,), GRAPH_MAX_FRAMES // 2 // 20 + 1)  # past GRAPH_MAX_FRAMES decoder frames
    solo = kokoro_cpu(ids, ref_s, 1.0, torch.Generator().manual_seed(3), durations=durations)
    runner = KokoroRunner(kokoro_cpu)
    runner.graphs = EagerGraphs()
    out = runner.forward(ids, ref_s, 1.0, torch.Generator().manual_seed(3), durations=durations)
    keys = [k[0] for k in runner.graphs.keys]
    assert keys == ["tokens"]
    # the token stages' masked passes round F0 at float32's level, which the harmonic source's phase carries into
    # the waveform: the spectrum is the bound for the audio
    assert torch.equal(out.durations, solo.durations) and out.audio.shape == solo.audio.shape
    assert torch.isfinite(out.audio).all()
    assert log_spectral_distance(out.audio, solo.audio) <= tolerance("float32", "spectral")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_on_a_gpu_the_graphs_multiply_by_the_reciprocal_of_speed_as_a_division_by_a_float_does():
    # The token graph takes 1 / speed as a tensor (a graph bakes Python scalars in); this is what makes its
    # rounding forward's: ATen's CUDA division by a CPU scalar multiplies by the reciprocal, taken in double and
    # rounded to float32 (2.9: float32's own 1 / 2.9 differs from it, and x / 2.9 follows the double one)
    x = torch.rand(1 << 20, device="cuda", generator=torch.Generator("cuda").manual_seed(0)) * 60
    speeds = [1.3, 0.7, 1.17, 2.9] + torch.empty(40).uniform_(0.5, 2.0, generator=torch.Generator().manual_seed(1)).tolist()
    for speed in speeds:
        assert torch.equal(x / speed, x * torch.tensor([1.0 / speed], dtype=torch.float32).cuda()), speed


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_on_a_gpu_the_whole_graphed_forward_keeps_the_durations_and_the_spectrum(kokoro_weights):
    from tilewave.models.kokoro import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    cases = [(random_token_ids(n, 9 + n).cuda(), voice_style(n, "jm_kumo").cuda(), speed)
             for n, speed in ((12, 1.0), (77, 1.3), (420, 0.6))]
    eager = [model(ids, ref_s, speed, torch.Generator("cuda").manual_seed(4)) for ids, ref_s, speed in cases]
    feats = [model.features(ids, ref_s, speed)["F0"] for ids, ref_s, speed in cases]
    runner = KokoroRunner(model, cuda_graphs=True)
    for _ in range(2):
        for (ids, ref_s, speed), solo, f0 in zip(cases, eager, feats):
            out = runner.forward(ids, ref_s, speed, torch.Generator("cuda").manual_seed(4))
            assert torch.equal(out.durations, solo.durations)
            assert torch.isfinite(out.audio).all() and out.audio.shape == solo.audio.shape
            assert scaled_max_error(runner.features(ids, ref_s, speed)["F0"], f0) <= tolerance("float32", "reduction")
            assert log_spectral_distance(out.audio, solo.audio) <= tolerance("float32", "spectral")
    # tokens, frames, generator once each per bucket; an item past GRAPH_MAX_FRAMES graphs its token stages only
    graphed = [2 * int(solo.durations.sum()) <= GRAPH_MAX_FRAMES for solo in eager]
    assert any(graphed) and not all(graphed)
    assert runner.graphs.captures == sum(3 if g else 1 for g in graphed)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_on_a_gpu_graphs_with_their_branches_on_side_streams_give_the_one_stream_graphs_bit_for_bit(kokoro_weights):
    # graphs.concurrently records the independent parts (F0 | energy blocks, noise | upsampling, the three
    # resblocks) on side streams; the kernels and their order within a branch are the one-stream graph's, so the
    # audio must not differ in a bit, at every bucket and on every replay
    from tilewave.models.kokoro import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    cases = [(random_token_ids(n, 5 + n).cuda(), voice_style(n, "jf_nezumi").cuda(), speed)
             for n, speed in ((9, 1.0), (64, 0.8), (150, 1.2))]
    outs, captures = {}, {}
    for streams in (False, True):
        runner = KokoroRunner(model, BatchPolicy(branch_streams=streams), cuda_graphs=True)
        outs[streams] = [[runner.forward(ids, ref_s, speed, torch.Generator("cuda").manual_seed(2))
                          for ids, ref_s, speed in cases] for _ in range(2)]
        captures[streams] = runner.graphs.captures
    assert captures[True] == captures[False] >= len(cases) + 2  # every graph recorded once, in both forms
    for one, side in zip(outs[False], outs[True]):
        for a, b in zip(one, side):
            assert torch.isfinite(b.audio).all() and b.audio.abs().max() > 0
            assert torch.equal(a.durations, b.durations) and torch.equal(a.audio, b.audio)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_on_a_gpu_a_graph_replay_gives_the_eager_audio_and_is_recorded_once_per_bucket(kokoro_weights):
    # the graphs' masked passes round F0 like a padded batch (<= 1e-6), which the harmonic source's phase
    # integral carries into the waveform: the spectrum is the bound, the durations exact
    from tilewave.models.kokoro import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    ids, ref_s = random_token_ids(30, 3).cuda(), voice_style(30, "jf_alpha").cuda()
    eager = model(ids, ref_s, 1.0, torch.Generator("cuda").manual_seed(4))
    runner = KokoroRunner(model, cuda_graphs=True, max_graphs=3)
    outs = [runner.forward(ids, ref_s, 1.0, torch.Generator("cuda").manual_seed(4)) for _ in range(3)]
    for out in outs:
        assert torch.equal(out.durations, eager.durations)
        assert log_spectral_distance(out.audio, eager.audio) <= tolerance("float32", "spectral")
    assert torch.equal(outs[1].audio, outs[0].audio) and torch.equal(outs[2].audio, outs[0].audio)  # replays
    assert runner.graphs.captures == 3 and len(runner.graphs) == 3


def test_a_stream_through_the_engine_takes_the_graphed_path_for_its_single_items(kokoro_cpu):
    # The engine hands single items to the model as batches of one (on a GPU a stream's first chunk; on this CPU,
    # which runs a batch's items one by one, every chunk): with graphs on (EagerGraphs here, what a GPU records
    # and replays) they go through the token and frame graphs and the generator's, and the stream says what the
    # eager engine says: the same chunks and durations, the spectrum within the float32 bound
    import numpy as np

    from tilewave.engine import Session

    text = "The lamp by the door was lit. Outside, the rain went on for hours, and nobody came."
    with Session(device="cpu", model=kokoro_cpu, voice="jm_kumo") as session:
        eager = list(session.stream(text, seed=2))
    graphs = EagerGraphs()
    with Session(device="cpu", model=kokoro_cpu, voice="jm_kumo") as session:
        session.load().runner.graphs = graphs  # before the first request: what a GPU session's runner has
        graphed = list(session.stream(text, seed=2))
    kinds = {k[0] for k in graphs.keys}
    assert len(eager) >= 2 and kinds == {"tokens", "frames", "generator"}
    assert [c.text for c in graphed] == [c.text for c in eager]
    for g, e in zip(graphed, eager, strict=True):
        assert torch.equal(g.durations, e.durations) and g.audio.shape == e.audio.shape and np.isfinite(g.audio).all()
        assert log_spectral_distance(torch.from_numpy(g.audio), torch.from_numpy(e.audio)) <= tolerance("float32",
                                                                                                         "spectral")


class _FakeGraph:
    def __init__(self, fn, static_in):
        self.fn, self.static_in, self.replays = fn, static_in, 0

    def replay(self):
        self.replays += 1


def _fake_capture(cache, fn, inputs):
    static_in = tuple(t.clone() for t in inputs)
    out = tuple(fn(*static_in))
    cache.captures += 1
    return _FakeGraph(fn, static_in), static_in, out, sum(t.numel() * t.element_size() for t in (*static_in, *out))


def test_a_key_runs_eagerly_until_it_is_seen_again_and_the_cache_keeps_to_its_bytes(monkeypatch):
    from tilewave.ops.graphs import GraphCache

    cache = GraphCache(8, max_bytes=3 * 2 * 4 * 16)  # three graphs of one 16-float input and output each
    monkeypatch.setattr(GraphCache, "_capture", lambda self, fn, inputs: _fake_capture(self, fn, inputs))
    x = torch.randn(16, generator=torch.Generator().manual_seed(0))
    fn = lambda t: (t * 2,)  # noqa: E731
    first = cache.run("a", fn, (x,), record_after=1)
    assert cache.captures == 0 and len(cache) == 0 and torch.equal(first[0], x * 2)  # eager, not recorded
    cache.run("a", fn, (x,), record_after=1)
    assert cache.captures == 1 and cache.keys == ["a"]  # the second call records
    cache.run("a", fn, (x,), record_after=1)
    assert cache.captures == 1 and cache._graphs["a"][0].replays == 2  # then replays
    for key in "bcd":
        cache.run(key, fn, (x,))  # record_after 0: recorded at once
    assert cache.keys == ["b", "c", "d"] and cache.bytes == 3 * 2 * 4 * 16  # "a", least recent, dropped for bytes


@pytest.mark.parametrize("items", [2, 5])
def test_a_graphed_padded_batch_gives_each_item_its_solo_durations_and_features(kokoro_cpu, items):
    # A padded batch from the graphs of its batch bucket (BatchPolicy.padded_batches; EagerGraphs runs what a GPU
    # records): 5 items in a bucket of 6 rows, the last repeated into the spare row. Each item's durations are its
    # solo run's exactly, its features and audio within the float32 bounds of its solo run's.
    rng = torch.Generator().manual_seed(items)
    cases = [(random_token_ids(n, 20 + n), voice_style(n, v), speed) for n, v, speed in
             [(int(torch.randint(4, 70, (1,), generator=rng)), ("jf_alpha", "jm_kumo")[i % 2], (1.0, 0.5)[i % 2])
              for i in range(items)]]
    ids = [c[0][0] for c in cases]
    ref_s = torch.cat([c[1] for c in cases])
    speeds = [c[2] for c in cases]
    solo = [kokoro_cpu.features(i, r, s) for i, r, s in cases]
    solo_audio = [kokoro_cpu(i, r, s, torch.Generator().manual_seed(b)) for b, (i, r, s) in enumerate(cases)]
    runner = KokoroRunner(kokoro_cpu, BatchPolicy(padded_batches=True))
    runner.graphs = EagerGraphs()
    f = runner._features(ids, ref_s, speeds, None)
    outs = runner.forward_batch(ids, ref_s, speeds, [torch.Generator().manual_seed(b) for b in range(items)],
                                padded=True)
    keys = runner.graphs.keys
    bucket = BatchPolicy().batch_bucket(items)
    assert {k[0] for k in keys} == {"tokens", "frames", "generator"} and all(k[-1] == bucket for k in keys)
    for b, (one, out, audio) in enumerate(zip(solo, outs, solo_audio)):
        n = one["durations"].shape[0]
        frames = int(one["durations"].sum())
        assert torch.equal(f["durations"][b], one["durations"]) and torch.equal(out.durations, one["durations"])
        for name in ("bert", "d_en", "d", "duration_logits"):
            assert scaled_max_error(f[name][b:b + 1, :n], one[name]) <= tolerance("float32", "reduction"), name
        for name, cut in (("en", frames), ("asr", frames), ("F0", 2 * frames), ("N", 2 * frames),
                          ("decoder", 2 * frames)):
            assert scaled_max_error(f[name][b:b + 1, ..., :cut], one[name]) <= tolerance("float32", "reduction"), name
        assert torch.isfinite(out.audio).all() and out.audio.shape == audio.audio.shape
        assert log_spectral_distance(out.audio, audio.audio) <= tolerance("float32", "spectral")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_on_a_gpu_a_padded_batch_from_graphs_runs_eagerly_then_records_then_replays(kokoro_weights):
    # BatchPolicy.padded_batches: 5 items in the bucket of 6; the first call of its keys eager, the second
    # recorded, the third replayed: all three bit-identical, and the durations the eager padded batch's
    from tilewave.models.kokoro import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    cases = [(random_token_ids(n, 30 + n)[0].cuda(), voice_style(n, "jm_kumo").cuda()) for n in (9, 40, 77, 23, 61)]
    ids, ref_s = [c[0] for c in cases], torch.cat([c[1] for c in cases])
    speeds = [1.0, 1.3, 0.8, 1.0, 1.0]

    def run(runner):
        return runner.forward_batch(ids, ref_s, speeds, [torch.Generator("cuda").manual_seed(b) for b in range(5)],
                                    padded=True)

    eager = run(KokoroRunner(model))  # no graphs: the eager padded pass
    runner = KokoroRunner(model, BatchPolicy(padded_batches=True), cuda_graphs=True)
    outs = [run(runner) for _ in range(3)]
    assert runner.graphs.captures == 3  # tokens, frames, generator: recorded on the second call
    for out in outs:
        for a, b in zip(out, outs[0]):
            assert torch.equal(a.audio, b.audio) and torch.equal(a.durations, b.durations)
    for a, e in zip(outs[0], eager):
        assert torch.equal(a.durations, e.durations) and torch.isfinite(a.audio).all()
        assert log_spectral_distance(a.audio, e.audio) <= tolerance("float32", "spectral")
