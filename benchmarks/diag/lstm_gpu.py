"""The batched LSTM's step in each of its forms, side by side in one process, beside cuDNN (CUDA).

    python benchmarks/diag/lstm_gpu.py [--batches 1,2,3,4,5,8,16,64] [--reps 50] [--json F]

Kokoro's BiLSTM (640 -> 2 x 256) over 383 tokens and 962 frames (up to 16 items): a row at a time (exact FMAs; the
plan's up to ROWS_MAX_B items), 'ieee' as the 16-row FMA dot, 'tf32x3' and 'tf32' (16-row tensor-core dots), cuDNN
through torch._VF.lstm (TF32 off). What ROWS_MAX_B was read from (RESULTS S17b, S17l).
Device time per call with time_cuda (L2 flushed), median, and µs per step; every form's output against the float64
oracle's (scaled max error) and whether the rows of a batch equal their items alone in the rows form.
"""
from __future__ import annotations

import argparse
import json

import torch

from tilewave.harness.timing import time_cuda
from tilewave.kernels import lstm_batched as KB
from tilewave.kernels.rnn import _lstm_inputs, lstm_oracle
from tilewave.reference.rnn import lstm_torch
from tilewave.spec.tolerance import scaled_max_error


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,2,3,4,5,8,16,64")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    rows = []
    for T in (383, 962):
        for B in [int(b) for b in args.batches.split(",")]:
            if T == 962 and B > 16:
                continue
            gen = torch.Generator().manual_seed(B * 1000 + T)
            p = {"B": B, "T": T, "I": 640, "H": 256, "D": 2, "lengths": B > 1}
            inputs = {k: v for k, v in _lstm_inputs(p, torch.float32, dev, gen).items() if k not in ("reverse", "path")}
            want = lstm_oracle(**{k: (v.cpu().double() if v.is_floating_point() else v.cpu()) if torch.is_tensor(v)
                                  else v for k, v in inputs.items()})
            nsplit, units, block_k, _ = KB.plan_lstm_batched(B, 256, 2, dev, "tf32x3")
            dot = (nsplit, units, block_k, KB.MAX_BLOCK_B)
            forms = {"rows": ("ieee", (nsplit, units, block_k, 1)), "ieee dot": ("ieee", dot),
                     "tf32x3 dot": ("tf32x3", dot), "tf32 dot": ("tf32", dot)}
            row = {"T": T, "B": B}
            for name, (prec, plan) in forms.items():
                fn = lambda prec=prec, plan=plan: KB.lstm_batched(**inputs, precision=prec, plan=plan)  # noqa: E731
                got = fn()
                t = time_cuda(fn, warmup=5, reps=args.reps)
                row[name] = {"us": t.median_us, "us_step": t.median_us / T,
                             "err": scaled_max_error(got.cpu().double(), want)}
                if name == "rows" and B > 1:
                    lens = inputs["lengths"].tolist()
                    alone = [KB.lstm_batched(inputs["x"][b:b + 1, :n], inputs["w_ih"], inputs["w_hh"],
                                             inputs["b_ih"], inputs["b_hh"], precision="ieee", plan=plan)
                             for b, n in enumerate(lens)]
                    row[name]["rows_alone_equal"] = sum(torch.equal(got[b, :n], a[0])
                                                        for b, (n, a) in enumerate(zip(lens, alone)))
            t = time_cuda(lambda: lstm_torch(**inputs), warmup=5, reps=args.reps)
            row["cudnn"] = {"us": t.median_us, "us_step": t.median_us / T}
            rows.append(row)
            print(f"T={T:4d} B={B:3d}: " + " | ".join(
                f"{k} {v['us']:8.1f} us ({v['us_step']:.2f}/step" + (f", err {v['err']:.1e}" if "err" in v else "")
                + (f", rows alone equal {v['rows_alone_equal']}/{B}" if "rows_alone_equal" in v else "") + ")"
                for k, v in row.items() if isinstance(v, dict)), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
