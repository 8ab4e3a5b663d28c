"""AdaIN with its activation in one pass, each form side by side in one process, beside PyTorch (CUDA).

    python benchmarks/diag/adain_gpu.py [--reps 50] [--json F]

Kokoro's AdaIN shapes at 383 phonemes (23.4 s of speech: the generator's 128 x 112,320 and 256 x 18,720, the
decoder's 1024 x 1,872 and the F0/N blocks' 512 x 3,744), float32 and bfloat16, each with the activation that
follows it in the model (snake in the generator, leaky ReLU elsewhere). Forms: the activation fused, split over
(row, chunk) programs and a program per row; AdaIN then the activation kernel as two passes, per row (the design
before session 18) and split; PyTorch (instance_norm and the activation). Device time with time_cuda (L2 flushed),
median µs, and the share of the H200's ~4.8 TB/s the fused pass's bytes (one read, one write) would take at that
time; whether the two fused forms give the same bits.
"""
from __future__ import annotations

import argparse
import json

import torch

from tilewave.harness.timing import time_cuda
from tilewave.kernels import activation as KA
from tilewave.kernels import norm as K
from tilewave.reference.norm import adain1d_torch

SHAPES = (((1, 128, 112320), "snake"), ((1, 256, 18720), "snake"), ((1, 1024, 1872), "leaky_relu"),
          ((1, 512, 3744), "leaky_relu"))
HBM_BYTES_PER_S = 4.8e12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev = torch.device("cuda")
    rows = []
    for shape, act in SHAPES:
        for dtype in (torch.float32, torch.bfloat16):
            gen = torch.Generator().manual_seed(shape[-1])
            B, C, L = shape
            x = (torch.randn(shape, generator=gen) * 2 + torch.randn(B, C, 1, generator=gen) * 3).to(dev, dtype)
            gamma = (1 + 0.5 * torch.randn(B, C, generator=gen)).to(dev)
            beta = (0.5 * torch.randn(B, C, generator=gen)).to(dev)
            alpha = (0.5 + torch.rand(C, generator=gen)).to(dev)
            kw = dict(act=act, alpha=alpha, slope=0.2)

            def then_act(y):
                return KA.snake(y, alpha) if act == "snake" else KA.leaky_relu(y, 0.2)

            forms = {
                "fused split": lambda: K.adain1d(x, gamma, beta, split=True, **kw),
                "fused rows": lambda: K.adain1d(x, gamma, beta, split=False, **kw),
                "two passes, rows": lambda: then_act(K.adain1d(x, gamma, beta, split=False)),
                "two passes, split": lambda: then_act(K.adain1d(x, gamma, beta, split=True)),
                "torch": lambda: adain1d_torch(x, gamma, beta, **kw),
            }
            same = torch.equal(forms["fused split"](), forms["fused rows"]())
            us = {name: time_cuda(fn, reps=args.reps).median_us for name, fn in forms.items()}
            floor_us = 2 * x.numel() * x.element_size() / HBM_BYTES_PER_S * 1e6
            rows.append({"shape": list(shape), "dtype": str(dtype).removeprefix("torch."), "act": act, "us": us,
                         "same_bits": same, "floor_us": floor_us})
            print(f"{str(list(shape)):18} {rows[-1]['dtype']:8} {act:10} "
                  + "  ".join(f"{n} {t:7.1f}" for n, t in us.items())
                  + f"  | floor {floor_us:5.1f} us, fused split at {floor_us / us['fused split']:.0%}; "
                  f"forms same bits: {same}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
