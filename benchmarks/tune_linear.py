"""The linear kernel's tiles at ALBERT's shapes, beside cuBLAS (H200; what kernels/linear.py's plan rests on).

For each of ALBERT's four products at 96 and 384 rows (a graphed single's 77 and 383 tokens, padded to the token
bucket) and every candidate tile: the kernel in float32 'tf32x3' with its epilogue, against the layer as ALBERT ran
it before (cuBLAS's F.linear in float32, TF32 off, then the GELU kernel or PyTorch's residual add) and the same with
TF32 on (one TF32 product, for scale). time_cuda (L2 flushed, median); error against the float64 oracle.

    python benchmarks/tune_linear.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json

import torch

from tilewave.harness.timing import time_cuda
from tilewave.kernels import linear as K
from tilewave.ops import activation
from tilewave.spec import REGISTRY

SHAPES = [("QKV", 2304, 768, {}), ("attention output + residual", 768, 768, {"residual": True}),
          ("FFN + GELU", 2048, 768, {"act": "gelu_tanh"}), ("FFN output + residual", 768, 2048, {"residual": True})]
# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)
TILES = [(16, 64, 32, 4, 3), (32, 64, 32, 4, 3), (64, 64, 32, 4, 3), (16, 32, 32, 4, 3), (32, 32, 32, 4, 3),
         (16, 64, 64, 4, 3), (32, 64, 64, 4, 4), (64, 64, 64, 4, 3), (64, 128, 32, 4, 3), (64, 128, 32, 8, 3),
         (128, 64, 32, 8, 3), (64, 32, 32, 4, 4)]


def before(x, weight, bias=None, act="none", residual=None):
    y = torch.nn.functional.linear(x, weight, bias)
    y = activation.gelu_tanh(y) if act == "gelu_tanh" else y
    return y if residual is None else residual + y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    rows = []
    for M in (96, 384):
        for what, N, Kd, extra in SHAPES:
            inputs = REGISTRY["linear"].make_inputs({"M": M, "N": N, "K": Kd, **extra}, torch.float32, "cuda", gen)
            inputs.pop("precision")
            ref = REGISTRY["linear"].oracle(**{k: (v.cpu() if torch.is_tensor(v) else v) for k, v in inputs.items()})
            torch.backends.cuda.matmul.allow_tf32 = False
            fp32 = time_cuda(lambda: before(**inputs)).median_us
            torch.backends.cuda.matmul.allow_tf32 = True
            tf32 = time_cuda(lambda: before(**inputs)).median_us
            torch.backends.cuda.matmul.allow_tf32 = False
            row = {"M": M, "N": N, "K": Kd, "what": what, "cublas_fp32_us": fp32, "cublas_tf32_us": tf32,
                   "plan": list(K.plan_linear(M, N)), "tiles": {}}
            for tile in TILES:
                try:
                    out = K.linear(**inputs, precision="tf32x3", plan=tile)
                    us = time_cuda(lambda: K.linear(**inputs, precision="tf32x3", plan=tile)).median_us
                except Exception as exc:  # a tile the GPU cannot compile (shared memory): recorded, not fatal
                    row["tiles"][str(tile)] = {"error": str(exc)[:120]}
                    continue
                err = float((out.cpu().double() - ref).abs().max() / max(1.0, float(ref.abs().max())))
                row["tiles"][str(tile)] = {"us": us, "err": err}
            best = min((v["us"], k) for k, v in row["tiles"].items() if "us" in v)
            plan_us = row["tiles"].get(str(tuple(row["plan"])), {}).get("us", float("nan"))
            print(f"[{M}, {Kd}] -> {N} {what}: cuBLAS fp32 {fp32:.1f} µs, tf32 {tf32:.1f}; plan {tuple(row['plan'])} "
                  f"{plan_us:.1f}; best {best[1]} {best[0]:.1f}", flush=True)
            for k, v in row["tiles"].items():
                print(f"    {k}: " + (f"{v['us']:.1f} µs err {v['err']:.1e}" if "us" in v else v["error"]))
            rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
