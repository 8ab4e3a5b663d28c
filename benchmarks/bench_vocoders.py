"""Vocoders end to end: the command line that benchmarks/gpu_session.sh and RESULTS.md cite, over
tilewave.harness.model_bench (`tilewave bench --model bigvgan` and `--model decoder`, which document the rows).

  1. BigVGAN v2 24 kHz on --seconds of audio (10 s, 937 mel frames), random weights, beside NVIDIA's `bigvgan`
     package on the same weights (optional: `pip install --no-deps bigvgan==2.4.1`; without it its row says so).
  2. The seed's causal decoder: 124 latent frames -> 59,520 samples.
On a GPU each at 'ieee' and 'tf32x3', with its per-stage profile. On a CPU keep --seconds small.

Usage: python benchmarks/bench_vocoders.py [--device cuda] [--seconds 10] [--reps 10] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tilewave.harness import model_bench  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of 24 kHz audio for BigVGAN")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    precisions = ("ieee", "tf32x3") if args.device == "cuda" else ("ieee",)
    reports = [model_bench.run(model_bench.Options(model, args.device, precisions, reps=args.reps, seconds=seconds))
               for model, seconds in (("bigvgan", args.seconds), ("decoder", None))]
    if args.json:
        meta = {k: reports[0][k] for k in ("device", "gpu", "torch", "peaks")}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": [r for rep in reports for r in rep["rows"]]}, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
