"""Where a graphed single Kokoro forward's time goes on a GPU: each graph replay, the read-back, the eager parts.

    python benchmarks/diag_graphs_gpu.py [--phonemes N] [--precision tf32x3] [--reps 20] [--json FILE]

One item (the first N phonemes of the benchmark's medium input, default 54: a stream's first chunk of
bench_first_audio.py) through KokoroModel.forward with graphs on. The whole forward is timed as it runs; then
again with a synchronize after each part (the token graph, the durations' read-back, the frame graph, the
harmonic source, the generator graph, the iSTFT, the rest), so the parts add up to a longer call than the plain
one: each part's figure is its own device time plus its host time. Medians of --reps after a warm-up.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict

import torch

from tilewave.engine.voices import load_voice, style_for
from tilewave.harness.model_bench import VOICE, load_kokoro, read_inputs
from tilewave.ops import spectral
from tilewave.precision import scope
from tilewave.text.vocab import encode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phonemes", type=int, default=54)
    ap.add_argument("--precision", default="tf32x3")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    model, _ = load_kokoro("cuda", args.dtype)
    model.use_cuda_graphs()
    ps = read_inputs(None)["medium"][:args.phonemes]
    ids = encode(ps)[0].cuda()[None]
    ref_s = style_for(load_voice(VOICE), len(ps)).reshape(1, -1).cuda()
    dtype = getattr(torch, args.dtype)

    def forward():
        return model(ids, ref_s, 1.0, torch.Generator("cuda").manual_seed(0), dtype=dtype)

    parts: dict[str, list[float]] = defaultdict(list)
    timing = {"on": False}

    def timed(name, fn):
        def wrapper(*a, **k):
            if not timing["on"]:
                return fn(*a, **k)
            torch.cuda.synchronize()
            t = time.perf_counter()
            out = fn(*a, **k)
            torch.cuda.synchronize()
            parts[name].append((time.perf_counter() - t) * 1e3)
            return out
        return wrapper

    graphs_run = model.graphs.run
    model.graphs.run = lambda key, fn, inputs: timed(f"graph {key[0]}", graphs_run)(key, fn, inputs)
    gen = model.decoder.generator
    gen.source = timed("harmonic source (eager)", gen.source)
    spectral.istft_exp_sin = timed("istft (eager)", spectral.istft_exp_sin)
    def calls():  # wall ms of each call to its audio on the host (what the engine hands on)
        ms = []
        for _ in range(args.reps):
            torch.cuda.synchronize()
            t = time.perf_counter()
            forward().audio.cpu()
            ms.append((time.perf_counter() - t) * 1e3)
        return ms

    with scope(args.precision):
        for _ in range(3):
            out = forward()
        plain = calls()
        timing["on"] = True
        whole = calls()
    rows = {"phonemes": args.phonemes, "audio_s": out.audio.numel() / 24000, "precision": args.precision,
            "dtype": args.dtype, "captures": model.graphs.captures,
            "forward + .cpu(), as it runs": statistics.median(plain),
            "forward + .cpu(), a sync after each part": statistics.median(whole)}
    rows.update({name: statistics.median(v) for name, v in parts.items()})
    named = sum(statistics.median(v) for v in parts.values())
    rows["the rest (read-back, host code, copies)"] = rows["forward + .cpu(), a sync after each part"] - named
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; {args.phonemes} phonemes -> "
          f"{rows['audio_s']:.2f} s, {args.precision} {args.dtype}, medians of {args.reps}")
    for k, v in rows.items():
        print(f"{k:45} {v:.2f}" if isinstance(v, float) else f"{k:45} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
