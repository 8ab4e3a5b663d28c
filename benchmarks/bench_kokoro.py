"""Kokoro-82M end to end on one GPU, same weights, same inputs, same run:

  tilewave on its Triton kernels (float32 products exact, and with --precisions also tf32x3: float32-class
  error on tensor cores), tilewave on PyTorch ops (`backend("torch")`), and the official `kokoro`
  0.9.4 KModel (eager fp32, TF32 off), each timed with device events (median after warm-up), plus
  tilewave's per-stage profile and its parity with the official model (durations, audio).

The inputs are English sentences phonemized on a machine with espeak (`--make-inputs FILE`), so that the
GPU machine needs no phonemizer:  python3 benchmarks/bench_kokoro.py --inputs benchmarks/kokoro_inputs.json

`--batch B [--device cpu]`: B sentences of mixed lengths (cut from the same inputs) through
KokoroModel.forward_batch, beside the same B one by one through forward, in one run: aggregate x real
time, peak memory (the process's RSS high-water mark on the CPU, solo run first; the allocator's peak on a
GPU) and the largest audio difference batch vs solo with the count of items whose durations are equal.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEXTS = {
    "short": "The quick brown fox jumps over the lazy dog, and then it runs back home.",
    "medium": ("Speech synthesis has come a long way. Early systems stitched together recorded fragments of "
               "speech, and they sounded choppy and robotic. Modern neural models predict how long each sound "
               "lasts, how the pitch rises and falls, and finally the waveform itself, one sample at a time or "
               "all at once. The result can be hard to tell apart from a human voice, even over a long passage."),
    "long": ("It was a bright cold day in April, and the clocks were striking thirteen. The hallway smelt of "
             "boiled cabbage and old rag mats. At one end of it a coloured poster, too large for indoor display, "
             "had been tacked to the wall. It depicted simply an enormous face, more than a metre wide: the face "
             "of a man of about forty-five, with a heavy black moustache and ruggedly handsome features. Winston "
             "made for the stairs. It was no use trying the lift. Even at the best of times it was seldom working, "
             "and at present the electric current was cut off during daylight hours. It was part of the economy "
             "drive in preparation for Hate Week. The flat was seven flights up, and Winston, who was thirty-nine "
             "and had a varicose ulcer above his right ankle, went slowly, resting several times on the way."),
}


def make_inputs(path: str) -> None:
    from tilewave.text.espeak import EspeakPhonemizer
    from tilewave.text.vocab import MAX_PHONEMES

    ph = EspeakPhonemizer("en-us")
    out = {name: ph([text])[0][:MAX_PHONEMES] for name, text in TEXTS.items()}
    Path(path).write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print({k: len(v) for k, v in out.items()})


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    n = min(a.numel(), b.numel())
    a, b = a.flatten()[:n].double(), b.flatten()[:n].double()
    return ((a - b).norm() / b.norm()).item()


def run(inputs_path: str, reps: int, out_json: str | None, precisions: list[str]) -> None:
    import triton

    from tests.models.kokoro_reference import official_kmodel
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.harness.timing import time_cuda
    from tilewave.profiling import StageProfiler
    from tilewave.models.kokoro import KokoroModel
    from tilewave.models.kokoro import weights as W
    from tilewave.ops import backend, placements, reset_placements
    from tilewave.precision import scope as fp32_matmul_precision
    from tilewave.text.vocab import encode

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    weights = W.load_weights(None, KokoroModel.expected_shapes())
    ours = KokoroModel.from_weights(weights, dev)
    pth = W.save_official_layout(weights, Path(tempfile.mkdtemp()) / "kokoro-dequantized.pth")
    official = official_kmodel(pth, dev)
    pack = load_voice("jf_alpha")
    phonemes = json.loads(Path(inputs_path).read_text())
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "rows": []}
    print(f"# {report['gpu']}  torch {torch.__version__}  triton {triton.__version__}")
    for name, ps in phonemes.items():
        ids = encode(ps).to(dev)
        ref_s = style_for(pack, len(ps)).to(dev)

        def tilewave_triton(seed=0):
            return ours(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(seed))

        def tilewave_torch(seed=0):
            with backend("torch"):
                return ours(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(seed))

        def official_fn(seed=0):
            torch.manual_seed(seed)
            with torch.no_grad():
                return official.forward_with_tokens(ids, ref_s, 1.0)

        a_tri, a_tt, (a_off, d_off) = tilewave_triton(), tilewave_torch(), official_fn()
        row = {"input": name, "phonemes": len(ps), "audio_s": a_off.numel() / 24000,
               "durations_equal_triton": bool(torch.equal(a_tri.durations.cpu(), d_off.cpu())),
               "durations_equal_torch": bool(torch.equal(a_tt.durations.cpu(), d_off.cpu())),
               "audio_rel_l2_triton": rel_l2(a_tri.audio, a_off), "audio_rel_l2_torch": rel_l2(a_tt.audio, a_off),
               "finite": bool(torch.isfinite(a_tri.audio).all())}
        for label, fn in (("ms_tilewave_triton", tilewave_triton), ("ms_tilewave_torch", tilewave_torch),
                          ("ms_official", official_fn)):
            row[label] = time_cuda(fn, warmup=2, reps=reps, flush_l2=False).median_us / 1e3
        for precision in precisions:  # the same Triton path with float32 products on tensor cores
            with fp32_matmul_precision(precision):
                a_p = tilewave_triton()
                row[f"ms_tilewave_triton_{precision}"] = time_cuda(tilewave_triton, warmup=2, reps=reps,
                                                                   flush_l2=False).median_us / 1e3
            row[f"durations_equal_triton_{precision}"] = bool(torch.equal(a_p.durations.cpu(), d_off.cpu()))
            row[f"audio_rel_l2_triton_{precision}"] = rel_l2(a_p.audio, a_off)
            print(f"        precision {precision}: {row[f'ms_tilewave_triton_{precision}']:.1f} ms, durations equal "
                  f"{row[f'durations_equal_triton_{precision}']}, audio rel L2 {row[f'audio_rel_l2_triton_{precision}']:.2e}")
        prof = StageProfiler(dev)
        reset_placements()
        ours(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(0), profile=prof)
        row["stages_ms"] = {n: round(ms, 2) for n, _, ms, _ in prof.report()}
        row["placements"] = placements()
        report["rows"].append(row)
        print(f"{name:>6}: {len(ps)} phonemes -> {row['audio_s']:.2f} s | tilewave/triton {row['ms_tilewave_triton']:.1f} ms"
              f" | tilewave/torch {row['ms_tilewave_torch']:.1f} ms | official {row['ms_official']:.1f} ms"
              f" | x{row['ms_official'] / row['ms_tilewave_triton']:.2f} vs official"
              f" | durations equal {row['durations_equal_triton']}/{row['durations_equal_torch']}"
              f" | audio rel L2 {row['audio_rel_l2_triton']:.2e}/{row['audio_rel_l2_torch']:.2e}")
        print(prof.format("  stage"))
        fallbacks = [p for p in row["placements"] if p[1] == "torch"]
        print("  ops on PyTorch:", ", ".join(f"{op} ({why})" for op, _, why, _ in fallbacks) or "none")
    if out_json:
        Path(out_json).write_text(json.dumps(report, indent=1))


def batch_sentences(inputs_path: str, n: int) -> list[str]:
    """n phonemized sentences of mixed lengths: the inputs cut at sentence ends, taken in order, cycling."""
    import re

    found = [x for ps in json.loads(Path(inputs_path).read_text()).values()
             for x in re.split(r"(?<=[.!?])\s+", ps) if x.strip()]
    return [found[i % len(found)] for i in range(n)]


# one by one through forward; the engine's scheduler over the B requests; one padded forward_batch of all B
MODES = ("solo", "engine", "padded")  # padded last: its 2-3 GB peak slows what runs after it


def _batch_mode(mode: str, model, items, device: str, texts=()) -> dict:
    """Run the items solo, as one padded batch, or through the engine's scheduler (texts: their phonemes);
    seconds, audio and durations, peak memory in MB."""
    import resource
    import time
    from types import SimpleNamespace

    ids, ref_s, seeds = items
    gens = [torch.Generator(device).manual_seed(s) for s in seeds]
    if mode == "engine":  # made before the clock, like the model and the voice pack: one session serves every request
        from tilewave.engine import Session

        session = Session(device=device, model=model, voice="jf_alpha").load()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    if mode == "padded":
        outs = model.forward_batch(ids, ref_s, [1.0] * len(ids), gens, padded=True)
    elif mode == "engine":  # the scheduler's batches (length buckets, frame budget), the model's device policy
        with session:
            jobs = [session.prepare(ps, phonemes=True, seed=s)[0] for ps, s in zip(texts, seeds)]
            requests = [session.scheduler.submit(j, s, block=True) for j, s in zip(jobs, seeds)]
            chunks = [c for r in requests for c in r]
        assert len(chunks) == len(ids), "a sentence was cut into several chunks: compare whole sentences"
        outs = [SimpleNamespace(audio=torch.from_numpy(c.audio), durations=c.durations) for c in chunks]
    else:
        outs = [model(x[None], ref_s[i:i + 1], 1.0, gens[i]) for i, x in enumerate(ids)]
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() / 2 ** 20 if device == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"seconds": seconds, "peak_mb": peak, "audio": [o.audio.cpu() for o in outs],
            "durations": [o.durations.cpu() for o in outs]}


def run_batch(inputs_path: str, batch: int, device: str) -> None:
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.spec.tolerance import scaled_max_error
    from tilewave.models.kokoro import KokoroModel
    from tilewave.text.vocab import encode

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    model = KokoroModel.from_pretrained(device=device)
    pack = load_voice("jf_alpha")
    sentences = batch_sentences(inputs_path, batch)
    ids = [encode(ps)[0].to(device) for ps in sentences]
    ref_s = torch.cat([style_for(pack, len(ps)).reshape(1, -1) for ps in sentences]).to(device)
    items = (ids, ref_s, list(range(batch)))
    _batch_mode("solo", model, (ids[:1], ref_s[:1], [0]), device)  # warm-up (first calls compile / allocate)
    # solo first: the process's RSS high-water mark only grows, so after the batch it is the batch's peak
    # unless that stayed below the solo one (then printed as "<=")
    results = {mode: _batch_mode(mode, model, items, device, sentences) for mode in MODES}
    audio_s = sum(a.numel() for a in results["solo"]["audio"]) / 24000
    lengths = [x.numel() - 2 for x in ids]
    print(f"# {batch} sentences of {min(lengths)}..{max(lengths)} phonemes ({sum(lengths)} in all) -> {audio_s:.1f} s "
          f"of audio on {device}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    for mode in MODES:
        r = results[mode]
        bound = "<=" if device == "cpu" and mode != "solo" and r["peak_mb"] <= results["solo"]["peak_mb"] else ""
        print(f"  {mode:>6}: {r['seconds']:.2f} s, x{audio_s / r['seconds']:.1f} real time aggregate, "
              f"peak {'RSS' if device == 'cpu' else 'GPU memory'} {bound}{r['peak_mb']:.0f} MB")
    for mode in MODES[1:]:
        same = sum(torch.equal(a, b) for a, b in zip(results[mode]["durations"], results["solo"]["durations"]))
        diff = max(scaled_max_error(a, b) if a.shape == b.shape else float("inf")
                   for a, b in zip(results[mode]["audio"], results["solo"]["audio"]))
        print(f"  {mode} vs solo: durations identical for {same}/{batch} items, max audio difference {diff:.2e}; "
              f"{results['solo']['seconds'] / results[mode]['seconds']:.2f}x the speed of one by one")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--make-inputs", metavar="FILE", help="phonemize the benchmark texts into FILE (needs espeak)")
    p.add_argument("--inputs", default=str(ROOT / "benchmarks" / "kokoro_inputs.json"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--precisions", default="tf32x3", help="comma-separated extra float32 precisions to time (or '')")
    p.add_argument("--batch", type=int, metavar="B", help="B mixed-length sentences batched vs one by one")
    p.add_argument("--device", default="cpu", help="device for --batch (cpu or cuda)")
    args = p.parse_args()
    if args.make_inputs:
        make_inputs(args.make_inputs)
    elif args.batch:
        run_batch(args.inputs, args.batch, args.device)
    else:
        run(args.inputs, args.reps, args.json, [x for x in args.precisions.split(",") if x])


if __name__ == "__main__":
    main()
