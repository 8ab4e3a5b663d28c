"""Models end to end (`tilewave bench --model kokoro|bigvgan|decoder`): tilewave beside the official
implementation on the same weights, inputs and device, in one run.

Each row: the median time (harness.timing.time_model), x real time, peak memory (a GPU: the allocator's peak over
the timed runs; the CPU: the process's resident-set high-water mark so far, which only grows), the fraction of
the compute floor, the official implementation's time from the same run with x official (its ms / ours: > 1 is
faster) and the parity with it. The floor: the FLOPs of the model's convolutions and matmuls on this very input
(torch's FlopCounterMode over one run on the PyTorch ops; a Triton kernel is invisible to it) at the device's
measured matmul peak for the precision and dtype (harness.peaks; `floor_fraction`); none on the CPU.

  kokoro   Kokoro-82M's real weights (the int8 ONNX, dequantized), voice jf_alpha, the phonemes of
           kokoro_inputs.json (short, medium, long; phonemized once with espeak, so no phonemizer is needed);
           official: kokoro 0.9.4's KModel (float32, TF32 off). On a GPU also tilewave on its PyTorch ops and
           the per-stage profile with where each op ran.
           batches: B sentences of mixed lengths (the inputs cut at sentence ends) one by one through forward,
           through the engine's scheduler, as one padded forward_batch, and the official model one by one;
           parity there is each mode against one by one.
  bigvgan  BigVGAN v2 24 kHz (x256, 1536 channels, 100 mels), random weights, on `seconds` of audio (10 s: 937
           mel frames); official: NVIDIA's bigvgan 2.4.1 (PyTorch, float32, TF32 off, weight norm removed).
  decoder  the seed causal decoder (1024 -> 1536 -> ... -> 96 -> 1, x480), random weights, 124 latent frames
           (2.48 s); no official implementation.
The official packages are optional (harness/references.py): without one, its row says why and the rest runs.
"""
from __future__ import annotations

import json
import re
import resource
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import torch

from tilewave.errors import InputError
from tilewave.harness.timing import time_model
from tilewave.ops import backend, placements, reset_placements
from tilewave.precision import DTYPES as TORCH_DTYPES, KOKORO_DTYPES, check as check_precision, scope, torch_dtype

MODELS = ("kokoro", "bigvgan", "decoder")
DTYPES = TORCH_DTYPES  # the vocoders' storage dtypes; Kokoro's: KOKORO_DTYPES

INPUTS = Path(__file__).with_name("kokoro_inputs.json")
VOICE = "jf_alpha"
SAMPLE_RATE = 24_000  # Kokoro's, BigVGAN v2 24 kHz's and the seed decoder's
DEFAULT_SECONDS = {"bigvgan": 10.0, "decoder": 124 * 480 / SAMPLE_RATE}
DEFAULT_REPS = {"cuda": 5, "cpu": 3}
DEFAULT_BATCH_REPS = {"cuda": 3, "cpu": 1}
# first calls compile and autotune the Triton kernels (GPU) and allocate (both); a CPU batch run is long and
# allocates in its first seconds, so its modes go without
WARMUP = {"cuda": 2, "cpu": 1}
BATCH_WARMUP = {"cuda": 1, "cpu": 0}
BATCH_MODES = ("solo", "engine", "padded")  # padded last on the CPU: its 2-3 GB peak slows what runs after it

# bigvgan_v2_24khz_100band_256x, as published
BIGVGAN_V2_24K = dict(resblock="1", upsample_rates=[4, 4, 2, 2, 2, 2], upsample_kernel_sizes=[8, 8, 4, 4, 4, 4],
                      upsample_initial_channel=1536, resblock_kernel_sizes=[3, 7, 11],
                      resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5], [1, 3, 5]], use_tanh_at_final=False,
                      use_bias_at_final=False, activation="snakebeta", snake_logscale=True, num_mels=100,
                      n_fft=1024, hop_size=256, win_size=1024, sampling_rate=24000, fmin=0, fmax=None)


@dataclass
class Options:
    """What to bench; `check` validates it once, where it enters."""
    model: str
    device: str
    precisions: tuple[str, ...]
    dtype: str = "float32"
    batches: tuple[int, ...] = ()
    reps: int | None = None
    seconds: float | None = None  # bigvgan, decoder: seconds of audio
    inputs: str | None = None  # kokoro: the phonemes JSON (default INPUTS)
    official: bool = True
    graphs: bool = False  # kokoro --batch, on a GPU: the engine's batches from CUDA graphs (its session's runner)
    remeasure_peaks: bool = False
    report: dict = field(default_factory=dict)


def parse_batches(text: str) -> tuple[int, ...]:
    """'1,8,32' -> (1, 8, 32); anything else is an InputError naming it."""
    parts = [p.strip() for p in str(text).split(",")]
    if not all(re.fullmatch(r"[0-9]+", p) and int(p) >= 1 for p in parts):
        raise InputError(f"--batch {text!r}: give batch sizes as whole numbers of at least 1, comma-separated, "
                         "e.g. --batch 1,8,32")
    return tuple(int(p) for p in parts)


def check(opt: Options) -> Options:
    """`opt` if it names a bench that can run here, else an InputError saying what to change."""
    if opt.model not in MODELS:
        raise InputError(f"--model {opt.model!r} is not one of {', '.join(MODELS)}")
    if opt.device not in ("cpu", "cuda"):
        raise InputError(f"--device {opt.device!r} is not cpu or cuda")
    if opt.device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda but no CUDA device is visible here; use --device cpu")
    for p in opt.precisions:
        check_precision(p)
    dtypes = KOKORO_DTYPES if opt.model == "kokoro" else DTYPES
    if opt.dtype not in dtypes:
        raise InputError(f"--dtype {opt.dtype!r}: the {opt.model} bench runs in {' or '.join(dtypes)}"
                         + (" (float16 is untried for Kokoro: precision.KOKORO_DTYPES)" if opt.model == "kokoro" else ""))
    if opt.batches and opt.model != "kokoro":
        raise InputError(f"--batch is for --model kokoro (batched utterances); {opt.model} runs one input")
    if opt.inputs is not None and opt.model != "kokoro":
        raise InputError(f"--inputs is Kokoro's phonemes file; {opt.model} takes --seconds of audio")
    if opt.seconds is not None and (opt.model == "kokoro" or not opt.seconds > 0):
        raise InputError(f"--seconds {opt.seconds}: a positive length of audio, for --model bigvgan or decoder only")
    if opt.reps is not None and opt.reps < 1:
        raise InputError(f"--reps {opt.reps}: at least 1 timed run")
    if opt.graphs and (not opt.batches or opt.device != "cuda"):
        raise InputError("--graphs is for --batch on a GPU (--device cuda): CUDA graphs of the engine's batches")
    return opt


# -- measures ---------------------------------------------------------------------------------------------
def floor_fraction(flop: float, seconds: float, precision: str, dtype: str, peaks: dict | None) -> float | None:
    """The counted FLOPs' rate over the peak of the units doing them: bfloat16 storage on the bf16 tensor-core
    peak (16-bit products use them whatever the mode); float32 'ieee' on the float32 FMA peak; 'tf32' and
    'tf32x3' on the TF32 peak, tf32x3's three MMAs per product making its floor three times the FLOPs."""
    if peaks is None or not flop:
        return None
    if dtype != "float32":
        key, work = f"{dtype}_GFLOPs", flop
    elif precision == "ieee":
        key, work = "float32_GFLOPs", flop
    else:
        key, work = "tf32_GFLOPs", flop * (3 if precision == "tf32x3" else 1)
    return work / seconds / 1e9 / peaks[key]


def counted(fn):
    """(fn(), FLOPs of its convolutions and matmuls): run on the PyTorch ops, whose arithmetic torch's counter
    sees (elementwise work, FFTs and recurrences are not counted: the floor is the tensor-core/FMA work)."""
    from torch.utils.flop_counter import FlopCounterMode

    with backend("torch"), FlopCounterMode(display=False) as counter:
        out = fn()
    return out, counter.get_total_flops()


def _peak_mb(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2 ** 20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def timed(fn, device: str, reps: int, warmup: int):
    """(median ms, fn's last result, peak MB over the runs)."""
    last = []
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

    def run():  # the last result is kept for the parity columns: no extra run
        last[:] = [fn()]

    timing = time_model(run, device, warmup, reps)
    return timing.median_us / 1e3, last[0], _peak_mb(device)


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    """||a - b|| / ||b|| over their common length."""
    n = min(a.numel(), b.numel())
    a, b = a.flatten()[:n].double().cpu(), b.flatten()[:n].double().cpu()
    return ((a - b).norm() / b.norm()).item()


def _row(opt: Options, workload: str, impl: str, precision: str, dtype: str, audio_s: float, ms: float | None,
         peak_mb: float | None, flop: float, official_ms: float | None = None, **extra) -> dict:
    peaks = opt.report.get("peaks")
    return {"model": opt.model, "workload": workload, "impl": impl, "precision": precision, "dtype": dtype,
            "audio_s": audio_s, "ms": ms, "x_real_time": None if ms is None else audio_s / (ms / 1e3),
            "peak_mb": peak_mb, "gflop": flop / 1e9,
            "floor_fraction": None if ms is None else floor_fraction(flop, ms / 1e3, precision, dtype, peaks),
            "official_ms": official_ms, "x_official": official_ms / ms if official_ms and ms else None, **extra}


def _official_row(opt, workload, impl, audio_s, flop, ms, peak, why) -> dict:
    """The official implementation's own row (float32, TF32 off: against the float32 FMA peak), or why not."""
    row = _row(opt, workload, impl, "ieee", "float32", audio_s, ms, peak, flop)
    return row if ms is not None else dict(row, note=why)


def _profile(opt: Options, fn) -> dict:
    """On a GPU: fn's per-stage times and where each op ran (a Triton kernel or PyTorch, and why)."""
    if opt.device != "cuda":
        return {}
    from tilewave.profiling import StageProfiler

    prof = StageProfiler(opt.device)
    reset_placements()
    fn(prof)
    return {"stages_ms": {n: round(ms, 2) for n, _, ms, _ in prof.report()}, "placements": placements(),
            "profile_text": prof.format("  stage")}


# -- Kokoro -----------------------------------------------------------------------------------------------
def load_kokoro(device: str, dtype: str):
    """(model, weights): Kokoro's real weights and the model on them, the one place the bench's dtype reaches
    Kokoro (float32 only until KokoroModel takes a dtype: check() refuses the others)."""
    from tilewave.models.kokoro import KokoroModel
    from tilewave.models.kokoro import weights as W

    weights = W.load_weights(None, KokoroModel.expected_shapes())
    return KokoroModel.from_weights(weights, device), weights


def _official_kokoro(weights, device):
    """(KModel on the same weights, "") or (None, why not)."""
    from tilewave.harness.references import official_kmodel
    from tilewave.models.kokoro import weights as W

    try:
        with tempfile.TemporaryDirectory() as tmp:
            return official_kmodel(W.save_official_layout(weights, Path(tmp) / "kokoro.pth"), device), ""
    except ImportError as exc:
        return None, str(exc)


def read_inputs(path: str | None) -> dict[str, str]:
    return json.loads(Path(path or INPUTS).read_text(encoding="utf-8"))


def batch_sentences(path: str | None, n: int) -> list[str]:
    """n phonemized sentences of mixed lengths: the inputs cut at sentence ends, taken in order, cycling."""
    found = [x for ps in read_inputs(path).values() for x in re.split(r"(?<=[.!?])\s+", ps) if x.strip()]
    return [found[i % len(found)] for i in range(n)]


def bench_kokoro(opt: Options) -> list[dict]:
    """Single utterances: per input the official row, then tilewave per precision (on a GPU also on its PyTorch
    ops), each with durations equal to the official's and the audio's relative L2 against it."""
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.text.vocab import encode

    dev = opt.device
    reps, warmup = opt.reps or DEFAULT_REPS[dev], WARMUP[dev]
    model, weights = load_kokoro(dev, opt.dtype)
    official, why = _official_kokoro(weights, dev) if opt.official else (None, "not run (--no-official)")
    pack = load_voice(VOICE)
    rows = []
    for name, ps in read_inputs(opt.inputs).items():
        ids, ref_s = encode(ps).to(dev), style_for(pack, len(ps)).to(dev)

        def ours(profile=None, forward=model):
            return forward(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(0), profile=profile,
                           dtype=torch_dtype(opt.dtype))

        def official_fn():
            torch.manual_seed(0)
            with torch.no_grad():
                return official.forward_with_tokens(ids, ref_s, 1.0)

        first, flop = counted(ours)
        audio_s = first.audio.numel() / SAMPLE_RATE
        workload = f"{name}, {len(ps)} phonemes -> {audio_s:.2f} s"
        off_ms = off_peak = ref = None
        if official is not None:
            off_ms, ref, off_peak = timed(official_fn, dev, reps, warmup)
        rows.append(_official_row(opt, workload, "official kokoro KModel", audio_s, flop, off_ms, off_peak, why))

        def parity(out):
            if ref is None:
                return {"finite": bool(torch.isfinite(out.audio).all())}
            return {"durations_equal": bool(torch.equal(out.durations.cpu(), ref[1].cpu())),
                    "audio_rel_l2_vs_official": rel_l2(out.audio, ref[0]),
                    "finite": bool(torch.isfinite(out.audio).all())}

        for precision in opt.precisions:
            with scope(precision):
                ms, out, peak = timed(ours, dev, reps, warmup)
                extra = _profile(opt, ours) if precision == opt.precisions[0] else {}
            rows.append(_row(opt, workload, "tilewave", precision, opt.dtype, audio_s, ms, peak, flop, off_ms,
                             phonemes=len(ps), **parity(out), **extra))
        for precision in opt.precisions if dev == "cuda" else ():
            # replayed from CUDA graphs: the token stages always, the frame stages and generator up to
            # BatchPolicy.max_frames (the warm-up records them; KokoroRunner.use_cuda_graphs)
            with scope(precision):
                from tilewave.engine.runner import KokoroRunner

                eager = ours()
                graphed = KokoroRunner(model, cuda_graphs=True).forward
                ms, out, peak = timed(lambda: ours(forward=graphed), dev, reps, warmup)
            rows.append(_row(opt, workload, "tilewave from CUDA graphs", precision, opt.dtype, audio_s,
                             ms, peak, flop, off_ms, phonemes=len(ps), **parity(out),
                             max_abs_diff_vs_eager=float((out.audio - eager.audio).abs().max())))
        if dev == "cuda":  # the same model on its PyTorch ops (cuDNN and cuBLAS in float32, TF32 off)
            with backend("torch"):
                ms, out, peak = timed(ours, dev, reps, warmup)
            rows.append(_row(opt, workload, "tilewave on PyTorch ops", "ieee", opt.dtype, audio_s, ms, peak, flop,
                             off_ms, phonemes=len(ps), **parity(out)))
    return rows


def _batch_fn(mode: str, model, items, device: str, sentences, official, dtype: str = "float32",
              graphs: bool = False):
    """A function running the B items one way, returning their outputs (.audio, .durations) in order."""
    ids, ref_s, seeds = items

    def gens():
        return [torch.Generator(device).manual_seed(s) for s in seeds]

    def solo():
        return [model(x[None], ref_s[i:i + 1], 1.0, g, dtype=torch_dtype(dtype))
                for i, (x, g) in enumerate(zip(ids, gens()))]

    def padded():
        return model.forward_batch(ids, ref_s, [1.0] * len(ids), gens(), dtype=torch_dtype(dtype))

    def engine():  # the scheduler's batches (length buckets, frame budget), the runner's device policy
        jobs = [session.prepare(ps, phonemes=True, seed=s)[0] for ps, s in zip(sentences, seeds)]
        requests = [session.scheduler.submit(j, s, block=True) for j, s in zip(jobs, seeds)]
        chunks = [c for r in requests for c in r]
        if len(chunks) != len(ids):
            raise RuntimeError("a sentence was cut into several chunks: the batch compares whole sentences")
        return [SimpleNamespace(audio=torch.from_numpy(c.audio), durations=c.durations) for c in chunks]

    def official_one_by_one():
        outs = []
        with torch.no_grad():
            for i, x in enumerate(ids):
                torch.manual_seed(seeds[i])
                audio, dur = official.forward_with_tokens(x[None], ref_s[i:i + 1], 1.0)
                outs.append(SimpleNamespace(audio=audio, durations=dur))
        return outs

    if mode == "engine":
        # made before the clock, like the model and the voice pack: one session serves every request (the
        # caller closes it); its requests are timed from preparation to the last chunk
        from tilewave.engine import Session
        from tilewave.engine.process import configure_process
        from tilewave.precision import current

        # graphs off by default: every mode then runs the same eager model; with them (Options.graphs) the session's
        # runner replays its own (the other modes stay eager)
        configure_process(device)  # what a program serving the engine sets (the CLI's commands, a server)
        session = Session(device=device, model=model, voice=VOICE, precision=current(), dtype=dtype,
                          cuda_graphs=graphs).load()
        engine.close = session.close
    return {"solo": solo, "padded": padded, "engine": engine, "official": official_one_by_one}[mode]


def bench_kokoro_batches(opt: Options) -> list[dict]:
    """Per B: each mode's median of `reps` rounds; parity of every mode against one by one (durations identical,
    the largest scaled audio difference), and the official model one by one beside them."""
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.spec.tolerance import scaled_max_error
    from tilewave.text.vocab import encode

    dev, precision = opt.device, opt.precisions[0]
    reps, warmup = opt.reps or DEFAULT_BATCH_REPS[dev], BATCH_WARMUP[dev]
    model, weights = load_kokoro(dev, opt.dtype)
    official, why = _official_kokoro(weights, dev) if opt.official else (None, "not run (--no-official)")
    modes = (*BATCH_MODES, "official")
    pack, flop_of, rows = load_voice(VOICE), {}, []
    for batch in opt.batches:
        sentences = batch_sentences(opt.inputs, batch)
        ids = [encode(ps)[0].to(dev) for ps in sentences]
        ref_s = torch.cat([style_for(pack, len(ps)).reshape(1, -1) for ps in sentences]).to(dev)
        for i, ps in enumerate(sentences):  # the floor: each sentence's own work, whatever padding adds
            if ps not in flop_of:
                flop_of[ps] = counted(lambda: model(ids[i][None], ref_s[i:i + 1], 1.0))[1]
        flop = sum(flop_of[ps] for ps in sentences)
        items = (ids, ref_s, list(range(batch)))
        results = {}
        with scope(precision):
            if not warmup:  # one short item first, so the first mode timed does not pay the first call's costs
                model(ids[0][None], ref_s[:1], 1.0)
            for mode in modes:
                if mode == "official" and official is None:
                    continue
                fn = _batch_fn(mode, model, items, dev, sentences, official, opt.dtype, opt.graphs)
                try:
                    results[mode] = timed(fn, dev, reps, warmup)
                finally:
                    getattr(fn, "close", lambda: None)()
        solo_ms, solo_out, _ = results["solo"]
        audio_s = sum(o.audio.numel() for o in solo_out) / SAMPLE_RATE
        lengths = [x.numel() - 2 for x in ids]
        workload = f"batch {batch}: {min(lengths)}..{max(lengths)} phonemes -> {audio_s:.1f} s"
        off_ms = results["official"][0] if "official" in results else None
        for mode in modes:
            if mode not in results:
                rows.append(_official_row(opt, workload, "official KModel one by one", audio_s, flop, None, None,
                                          why))
                continue
            ms, outs, peak = results[mode]
            same = sum(torch.equal(a.durations.cpu(), b.durations.cpu()) for a, b in zip(outs, solo_out))
            diff = max(scaled_max_error(a.audio.flatten().cpu(), b.audio.flatten().cpu())
                       if a.audio.numel() == b.audio.numel() else float("inf") for a, b in zip(outs, solo_out))
            impl = {"solo": "tilewave one by one", "engine": "tilewave engine scheduler",
                    "padded": "tilewave padded forward_batch", "official": "official KModel one by one"}[mode]
            label = ("ieee", "float32") if mode == "official" else (precision, opt.dtype)
            rows.append(_row(opt, workload, impl, *label, audio_s, ms, peak, flop,
                             None if mode == "official" else off_ms, batch=batch, mode=mode, phonemes=lengths,
                             x_one_by_one=solo_ms / ms, durations_identical_vs_solo=f"{same}/{batch}",
                             max_audio_diff_vs_solo=diff))
    return rows


# -- vocoders ---------------------------------------------------------------------------------------------
def vocoder_workload(model_name: str, device: str, dtype: torch.dtype, seconds: float | None = None) -> dict:
    """What the vocoder benches run: BigVGAN v2 24 kHz (random weights, seed 0; `state` for the official) on
    `seconds` of random mels, or the seed decoder on its latent frames; with the workload's label and audio length."""
    from tilewave.models.vocoders.bigvgan import BigVGAN, BigVGANConfig, random_state_dict
    from tilewave.models.vocoders.causal_decoder import CausalDecoder, CausalDecoderConfig

    seconds = seconds or DEFAULT_SECONDS[model_name]
    gen = torch.Generator().manual_seed(0)
    state = None
    if model_name == "bigvgan":
        config = BigVGANConfig.from_dict(BIGVGAN_V2_24K)
        state = random_state_dict(config, seed=0)
        model = BigVGAN.from_state_dict(config, state, device=device, dtype=dtype)
        frames = max(1, int(seconds * config.sampling_rate) // config.hop)
        x = torch.randn(1, config.num_mels, frames, generator=gen).sub_(4).to(device)
        workload = f"BigVGAN v2 24 kHz, {frames} mel frames"
    else:
        config = CausalDecoderConfig()
        model = CausalDecoder.random(config, seed=0, device=device, dtype=dtype)
        frames = max(1, round(seconds * SAMPLE_RATE / config.hop))
        x = torch.randn(1, config.latent_dim, frames, generator=gen).to(device, dtype)
        workload = f"seed causal decoder, {frames} latent frames"
    audio_s = frames * config.hop / SAMPLE_RATE
    return dict(model=model, x=x, state=state, audio_s=audio_s, workload=f"{workload} -> {audio_s:.2f} s")


def bench_vocoder(opt: Options) -> list[dict]:
    """BigVGAN v2 24 kHz or the seed decoder on `seconds` of audio: the official row (BigVGAN), then tilewave per
    precision with the audio's relative L2 and max |difference| against the official."""
    dev = opt.device
    reps, warmup = opt.reps or DEFAULT_REPS[dev], WARMUP[dev]
    w = vocoder_workload(opt.model, dev, getattr(torch, opt.dtype), opt.seconds)
    model, x, state, audio_s, workload = w["model"], w["x"], w["state"], w["audio_s"], w["workload"]

    def ours(profiler=None):
        return model(x, profiler=profiler)

    flop = counted(ours)[1]
    rows, ref, off_ms = [], None, None
    if opt.model == "bigvgan":
        official, why = None, "not run (--no-official)"
        if opt.official:
            from tilewave.harness.references import official_bigvgan

            try:
                official, why = official_bigvgan(BIGVGAN_V2_24K, state, dev), ""
            except ImportError as exc:
                why = str(exc)
        off_peak = None
        if official is not None:
            with torch.no_grad():
                off_ms, ref, off_peak = timed(lambda: official(x), dev, reps, warmup)
        rows.append(_official_row(opt, workload, "official bigvgan (PyTorch)", audio_s, flop, off_ms, off_peak, why))
    for precision in opt.precisions:
        with scope(precision):
            ms, y, peak = timed(ours, dev, reps, warmup)
            extra = _profile(opt, ours) if precision == opt.precisions[0] else {}
        parity = {"finite": bool(torch.isfinite(y.float()).all())}
        if ref is not None:
            parity.update(audio_rel_l2_vs_official=rel_l2(y.float(), ref.float()),
                          max_abs_diff_vs_official=(y.float() - ref.float()).abs().max().item())
        rows.append(_row(opt, workload, "tilewave", precision, opt.dtype, audio_s, ms, peak, flop, off_ms,
                         **parity, **extra))
    for precision in opt.precisions if dev == "cuda" else ():  # the whole pass replayed from one CUDA graph
        from tilewave.ops.graphs import GraphCache

        graphs = GraphCache(max_graphs=1)
        with scope(precision):
            eager = ours()
            ms, y, peak = timed(lambda: graphs.run((precision, tuple(x.shape)), lambda v: (model(v),), (x,))[0],
                                dev, reps, warmup)
        rows.append(_row(opt, workload, "tilewave from a CUDA graph", precision, opt.dtype, audio_s, ms, peak, flop,
                         off_ms, finite=bool(torch.isfinite(y.float()).all()),
                         max_abs_diff_vs_eager=float((y.float() - eager.float()).abs().max())))
    return rows


# -- the command ------------------------------------------------------------------------------------------
def _fmt(v, spec: str, none: str = "n/a") -> str:
    return none if v is None else format(v, spec)


def format_row(r: dict) -> str:
    parity = []
    if "durations_equal" in r:
        parity.append(f"durations equal {r['durations_equal']}")
    if "durations_identical_vs_solo" in r:
        parity.append(f"vs one by one: {r['x_one_by_one']:.2f}x, durations identical {r['durations_identical_vs_solo']}"
                      f", max audio diff {r['max_audio_diff_vs_solo']:.2e}")
    if "audio_rel_l2_vs_official" in r:
        parity.append(f"audio rel L2 {r['audio_rel_l2_vs_official']:.2e}")
    if "max_abs_diff_vs_official" in r:
        parity.append(f"max |diff| {r['max_abs_diff_vs_official']:.2e}")
    if "max_abs_diff_vs_eager" in r:
        parity.append(f"max |graphs - eager| {r['max_abs_diff_vs_eager']:.1e}")
    if r.get("finite") is False:
        parity.append("NOT FINITE")
    official = "" if r.get("official_ms") is None else f"official {r['official_ms']:.1f} ms, x{r['x_official']:.2f}"
    rate = None if r["ms"] is None else r["gflop"] / (r["ms"] / 1e3)
    return (f"{r['workload']:<46} {r['impl']:<30} {r['precision']:>6} {r['dtype']:>8} {_fmt(r['ms'], '10.1f'):>10} "
            f"{_fmt(r['x_real_time'], '10.1f'):>10} {_fmt(r['peak_mb'], '8.0f'):>8} {_fmt(rate, '8.0f'):>8} "
            f"{_fmt(r['floor_fraction'], '6.1%'):>6}  {official:<28} {'; '.join(parity)}{r.get('note', '')}")


HEADER = (f"{'workload':<46} {'impl':<30} {'prec':>6} {'dtype':>8} {'ms':>10} {'x realtime':>10} {'peak MB':>8} "
          f"{'GFLOP/s':>8} {'floor':>6}  {'official, x official':<28} parity")


def run(opt: Options, json_path: str | None = None, out=print) -> dict:
    """Bench `opt` (checked), print a line per row, write the report as JSON; returns the report."""
    check(opt)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # the official rows: float32
    report = opt.report
    report.update(model=opt.model, device=opt.device, torch=torch.__version__, threads=torch.get_num_threads(),
                  precisions=list(opt.precisions), dtype=opt.dtype, gpu=None, peaks=None)
    if opt.device == "cuda":
        import triton

        from tilewave.harness.peaks import device_peaks

        report.update(gpu=torch.cuda.get_device_name(), triton=triton.__version__,
                      peaks=device_peaks(remeasure=opt.remeasure_peaks))
    out(f"# {opt.model} on {report['gpu'] or 'CPU'} ({report['threads']} threads), torch {torch.__version__}, "
        f"dtype {opt.dtype}, median of {opt.reps or (DEFAULT_BATCH_REPS if opt.batches else DEFAULT_REPS)[opt.device]}"
        + ("; peak memory: the process's RSS high-water mark so far; floor: n/a on the CPU" if opt.device == "cpu"
           else "; peak memory: the CUDA allocator's; floor: counted FLOPs at the measured matmul peak"))
    if opt.model == "kokoro":
        rows = bench_kokoro_batches(opt) if opt.batches else bench_kokoro(opt)
    else:
        rows = bench_vocoder(opt)
    report["rows"] = rows
    out(HEADER)
    for r in rows:
        out(format_row(r))
        if "profile_text" in r:
            out(r["profile_text"])
            fallbacks = [p for p in r["placements"] if p[1] == "torch"]
            out("  ops on PyTorch: " + (", ".join(f"{op} ({why})" for op, _, why, _ in fallbacks) or "none"))
    if json_path:
        rows_out = [{k: v for k, v in r.items() if k != "profile_text"} for r in rows]
        Path(json_path).write_text(json.dumps(dict(report, rows=rows_out), indent=1, default=str))
    return report
