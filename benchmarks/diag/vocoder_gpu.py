"""Where a vocoder's graph replay spends its device time on a GPU: kernels by name, per pass.

    python benchmarks/diag/vocoder_gpu.py [--model bigvgan|decoder] [--precision tf32] [--dtype bfloat16]
                                          [--reps 10] [--kernels 25] [--json FILE]

The pass `tilewave bench --model M` times (model_bench.vocoder_workload: BigVGAN v2 24 kHz on 10 s of random mels
with random weights, or the seed decoder on its 124 latent frames), replayed from one CUDA graph as that bench's
graph row is: its median wall time over --reps, then the same replays under torch.profiler, CUPTI's kernels summed
by name per pass (graphs_gpu.kernel_table), with the kernels' busy time against their span.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from tilewave.harness.model_bench import vocoder_workload
from tilewave.ops.graphs import GraphCache
from tilewave.precision import scope

from graphs_gpu import kernel_table


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bigvgan", choices=["bigvgan", "decoder"])
    ap.add_argument("--precision", default="tf32x3")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--kernels", type=int, default=25)
    ap.add_argument("--json")
    args = ap.parse_args()
    w = vocoder_workload(args.model, "cuda", getattr(torch, args.dtype))
    model, x, audio_s = w["model"], w["x"], w["audio_s"]
    graphs = GraphCache(max_graphs=1)
    with scope(args.precision):
        def forward():
            return graphs.run((args.precision, tuple(x.shape)), lambda v: (model(v),), (x,))[0]

        for _ in range(3):
            forward()
        torch.cuda.synchronize()
        walls = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            forward()
            torch.cuda.synchronize()
            walls.append((time.perf_counter() - t0) * 1e3)
        ms = statistics.median(walls)
        rows = {"model": args.model, "precision": args.precision, "dtype": args.dtype, "audio s": audio_s,
                "graph replay ms (median)": ms, "x real time": audio_s / ms * 1e3,
                "kernels": kernel_table(forward, args.reps, args.kernels, finish=lambda out: out)}
    print(f"## {args.model} {args.precision} {args.dtype}: {ms:.2f} ms per pass, {audio_s / ms * 1e3:.0f}x real time")
    for name, v in rows["kernels"].items():
        print(f"  {v:10.1f}  {name}" if isinstance(v, float) else f"  {v}  {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
