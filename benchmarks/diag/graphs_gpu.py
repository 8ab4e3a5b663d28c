"""Where a graphed single Kokoro forward's time goes on a GPU: each graph replay, the read-back, the eager parts.

    python benchmarks/diag/graphs_gpu.py [--phonemes N] [--precision tf32x3] [--reps 20] [--kernels K] [--json FILE]

One item (the first N phonemes of the benchmark's medium input, default 54: a stream's first chunk of
bench_first_audio.py) through KokoroRunner.forward with graphs on. The whole forward is timed as it runs; then
again with a synchronize after each part (the token graph, the durations' read-back, the frame graph, the
harmonic source, the generator graph, the iSTFT, the rest), so the parts add up to a longer call than the plain
one: each part's figure is its own device time plus its host time. Medians of --reps after a warm-up. Both forms
of the graphs, in turn: with their independent branches on side streams (ops.graphs.concurrently) and on one stream.
With --kernels K, the first form's forward is run under torch.profiler too (CUPTI sees each kernel a graph replay
launches): the K kernels that take most device time, per forward, with their calls, and the kernels' busy time
against the span from the first kernel's start to the last one's end (what is left of the span: the device idle
between kernels, e.g. waiting on the host's read-back).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict

import torch

from tilewave.engine.policy import BatchPolicy
from tilewave.engine.runner import KokoroRunner
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
    ap.add_argument("--no-streams", action="store_true", help="only the one-stream form")
    ap.add_argument("--kernels", type=int, default=0, help="profile the kernels, print the K heaviest")
    ap.add_argument("--json")
    args = ap.parse_args()
    model, _ = load_kokoro("cuda", args.dtype)
    runner = KokoroRunner(model, cuda_graphs=True)
    ps = read_inputs(None)["medium"][:args.phonemes]
    ids = encode(ps)[0].cuda()[None]
    ref_s = style_for(load_voice(VOICE), len(ps)).reshape(1, -1).cuda()
    dtype = getattr(torch, args.dtype)

    def forward():
        return runner.forward(ids, ref_s, 1.0, torch.Generator("cuda").manual_seed(0), dtype=dtype)

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

    # the graphs recorded with their independent parts on side streams (graphs.concurrently) and on one stream,
    # each form with its own graphs, in this process; their audio must be bit-identical
    forms = {"branches on side streams": True, "one stream": False}
    if args.no_streams:
        forms = {"one stream": False}
    rows = {"phonemes": args.phonemes, "precision": args.precision, "dtype": args.dtype}
    audio = {}
    for form, streams in forms.items():
        runner = KokoroRunner(model, BatchPolicy(branch_streams=streams), cuda_graphs=True)
        graphs_run = runner.graphs.run
        runner.graphs.run = lambda key, fn, inputs, run=graphs_run: timed(f"graph {key[0]}", run)(key, fn, inputs)
        parts.clear()
        timing["on"] = False
        with scope(args.precision):
            for _ in range(3):
                out = forward()
            audio[form] = out.audio.cpu()
            plain = calls()
            if args.kernels and "kernels" not in rows:  # the first form's (the landed one: side streams)
                rows["kernels"] = kernel_table(forward, args.reps, args.kernels)
            timing["on"] = True
            whole = calls()
        r = {"captures": runner.graphs.captures, "forward + .cpu(), as it runs": statistics.median(plain),
             "forward + .cpu(), a sync after each part": statistics.median(whole)}
        r.update({name: statistics.median(v) for name, v in parts.items()})
        r["the rest (read-back, host code, copies)"] = r["forward + .cpu(), a sync after each part"] - sum(
            statistics.median(v) for v in parts.values())
        rows[form] = r
    rows["audio_s"] = out.audio.numel() / 24000
    if len(audio) == 2:
        a, b = audio.values()
        rows["audio bit-identical across the forms"] = bool(torch.equal(a, b))
        rows["max |audio diff| across the forms"] = float((a - b).abs().max())
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; {args.phonemes} phonemes -> "
          f"{rows['audio_s']:.2f} s, {args.precision} {args.dtype}, medians of {args.reps}")
    for k, v in rows.items():
        if isinstance(v, dict):
            print(f"## {k}")
            for k2, v2 in v.items():
                print(f"{k2:45} {v2:.2f}" if isinstance(v2, float) else f"{k2:45} {v2}")
        else:
            print(f"{k:45} {v:.3g}" if isinstance(v, float) else f"{k:45} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def kernel_table(forward, reps: int, top: int, finish=lambda out: out.audio.cpu()) -> dict:
    """Per forward: the `top` kernels by device time (µs, calls), their busy time and the kernels' span (`finish`:
    what the caller does with a forward's output, a Kokoro forward's audio read back by default)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            finish(forward())
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if not kernels:
        return {"no kernel events": "CUPTI reported none"}
    by_name: dict[str, list[float]] = defaultdict(list)
    for e in kernels:
        by_name[e.name[:90]].append(e.time_range.end - e.time_range.start)
    busy = sum(sum(v) for v in by_name.values()) / reps
    span = (max(e.time_range.end for e in kernels) - min(e.time_range.start for e in kernels)) / reps
    table = {f"kernels' busy µs per forward (span {span:.0f} µs over {reps} forwards, with the gaps between)": busy,
             "kernel launches per forward": len(kernels) / reps}
    for name, ts in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:top]:
        table[f"{name}  ×{len(ts) / reps:g}"] = sum(ts) / reps
    return table


if __name__ == "__main__":
    main()
