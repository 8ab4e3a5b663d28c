"""Kokoro's padded batch on a GPU: where its time goes and why its items differ from their solo runs.

    python3 benchmarks/diag/batch_gpu.py [--batches 8,64] [--json F]
    python3 benchmarks/diag/batch_gpu.py --lstm-only      (the LSTM step costs and invariance: no model weights)

For each LSTM placement — `batched` (kernels/lstm_batched.py, what ops.rnn runs for B > 1 today), `one_seq`
(kernels/rnn.py's kernel for the whole batch, the one B = 1 takes), `cudnn` (PyTorch's LSTM, packed sequences) — and
each B: the padded forward_batch's time (median of 3 after a warm-up) beside the same items one by one, its
per-stage profile, and per item against its solo run as production makes it (B = 1: the one-sequence kernel): durations identical, the
largest F0 and audio differences. Then batch invariance of the pieces in isolation: is row b of a B-item call
bit-identical to a 1-item call on row b (LSTM kernels on the Kokoro predictor shape, a conv at decoder shape)?
Diagnostics only: the placements are swapped in by patching ops.rnn for this process.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tilewave.harness.model_bench import batch_sentences  # noqa: E402


@contextlib.contextmanager
def lstm_placement(name: str):
    import tilewave.ops.rnn as R
    from tilewave.ops.dispatch import kernels
    from tilewave.reference.rnn import lstm_torch_flat

    saved_lstm = R.lstm
    if name == "one_seq":  # the op's kernel for hidden widths past lstm_batched's (kernels.rnn.lstm)
        def one_seq(x, directions, lengths=None):
            w_ih, w_hh, b_ih, b_hh = (torch.stack(ts) for ts in zip(*directions))
            return kernels("rnn").lstm(x.contiguous(), w_ih, w_hh, b_ih, b_hh, lengths=lengths)
        R.lstm = one_seq
    elif name == "cudnn":
        def cudnn(x, directions, lengths=None):
            flat = [t for d in directions for t in d]
            return lstm_torch_flat(x, flat, len(directions) == 2, lengths)
        R.lstm = cudnn
    try:
        yield
    finally:
        R.lstm = saved_lstm


def timed(fn, reps=3):
    fn()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def scaled(a, b):
    from tilewave.spec.tolerance import scaled_max_error
    return scaled_max_error(a, b) if a.shape == b.shape else float("inf")


def invariance(dev) -> dict:
    from tilewave.kernels import lstm_batched as KB
    from tilewave.kernels import rnn as K
    from tilewave.ops import conv

    g = torch.Generator(dev).manual_seed(0)
    B, T, I, H = 8, 97, 640, 256
    x = torch.randn(B, T, I, device=dev, generator=g)
    w = [torch.randn(2, 4 * H, I, device=dev, generator=g) * 0.05, torch.randn(2, 4 * H, H, device=dev, generator=g) * 0.05,
         torch.randn(2, 4 * H, device=dev, generator=g) * 0.05, torch.randn(2, 4 * H, device=dev, generator=g) * 0.05]
    res = {}
    for name, fn in (("one_seq", K.lstm), ("batched", KB.lstm_batched)):
        full = fn(x, *w)
        rows = torch.cat([fn(x[b:b + 1], *w) for b in range(B)])
        res[f"lstm_{name}_rows_bit_identical"] = bool(torch.equal(full, rows))
        res[f"lstm_{name}_rows_max_diff"] = float((full - rows).abs().max())
    c = torch.randn(B, 1090, 311, device=dev, generator=g)
    wt = torch.randn(1024, 1090, 3, device=dev, generator=g) * 0.02
    full = conv.conv1d(c, wt, None, 1, 1)
    rows = torch.cat([conv.conv1d(c[b:b + 1], wt, None, 1, 1) for b in range(B)])
    res["conv_decoder_rows_bit_identical"] = bool(torch.equal(full, rows))
    res["conv_decoder_rows_max_diff"] = float((full - rows).abs().max())
    return res


def lstm_step_costs(dev) -> list[dict]:
    """lstm_batched's time per step by B and by how its recurrent product runs (exact FMAs or one TF32 MMA):
    if TF32 is much faster, the exact dot is what a step waits for; if not, the barrier or the gate shuffles."""
    from tilewave.harness.timing import time_cuda
    from tilewave.kernels import lstm_batched as KB

    g = torch.Generator(dev).manual_seed(1)
    T, I, H = 383, 640, 256
    w = [torch.randn(2, 4 * H, I, device=dev, generator=g) * 0.05, torch.randn(2, 4 * H, H, device=dev, generator=g) * 0.05,
         torch.randn(2, 4 * H, device=dev, generator=g) * 0.05, torch.randn(2, 4 * H, device=dev, generator=g) * 0.05]
    rows = []
    for B in (1, 16, 64):
        x = torch.randn(B, T, I, device=dev, generator=g)
        # the default split (64 programs of 4 units per direction) and coarser ones: fewer programs meet at each
        # step's barrier, each with a wider slice of W_hh and a wider dot
        for units in (4, 8, 16):
            plan = (H // units, units, H, KB.MAX_BLOCK_B)
            for precision in KB.PRECISIONS:
                try:
                    us = time_cuda(lambda: KB.lstm_batched(x, *w, precision=precision, plan=plan), warmup=3,
                                   reps=10).median_us
                except Exception as exc:  # a plan that does not compile or launch: say so and go on
                    print(f"lstm_batched B={B} units={units} {precision}: {type(exc).__name__}: {exc}"[:300])
                    continue
                rows.append({"B": B, "units": units, "precision": precision, "us": us, "us_per_step": us / T})
                print(f"lstm_batched B={B:3d} units={units:2d} {precision:5s}: {us / 1e3:8.2f} ms, "
                      f"{us / T:6.1f} us per step")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="8,64")
    ap.add_argument("--placements", default="batched,one_seq,cudnn")
    ap.add_argument("--precision", default="tf32x3")
    ap.add_argument("--json", default=None)
    ap.add_argument("--lstm-only", action="store_true", help="only lstm_batched's step costs and batch invariance")
    ap.add_argument("--no-lstm", action="store_true", help="skip the LSTM step costs and the invariance checks")
    ap.add_argument("--graphs", action="store_true",
                    help="the solo runs from CUDA graphs (KokoroRunner.use_cuda_graphs), as a server's batches of one")
    ap.add_argument("--kernels", type=int, default=0,
                    help="per B, the padded batch's K heaviest kernels (torch.profiler) for the first placement")
    args = ap.parse_args()
    from tilewave.precision import scope
    from tilewave.profiling import StageProfiler

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "precision": args.precision, "rows": []}
    with scope(args.precision):
        if not args.no_lstm:
            report["lstm_step_costs"] = lstm_step_costs(dev)
            report["invariance"] = invariance(dev)
            print("batch invariance (row b of a B-item call vs a 1-item call):", report["invariance"])
        batches = [] if args.lstm_only else [int(b) for b in args.batches.split(",")]
        if batches:  # the model, and the text front end its imports bring (num2words, ...), only for batches
            from tilewave.engine.runner import KokoroRunner
            from tilewave.engine.voices import load_voice, style_for
            from tilewave.models.kokoro import KokoroModel
            from tilewave.text.vocab import encode

            model = KokoroModel.from_pretrained(device=dev)
            single = KokoroRunner(model, cuda_graphs=args.graphs)  # the solo runs, from graphs with --graphs
            pack = load_voice("jf_alpha")
        for batch in batches:
            sentences = batch_sentences(None, batch)
            ids = [encode(ps)[0].to(dev) for ps in sentences]
            ref_s = torch.cat([style_for(pack, len(ps)).reshape(1, -1) for ps in sentences]).to(dev)
            gens = lambda: [torch.Generator(dev).manual_seed(i) for i in range(batch)]  # noqa: E731
            # solo runs as production makes them (B = 1 takes the one-sequence LSTM kernel whatever the placement)
            solo = [single.forward(x[None], ref_s[i:i + 1], 1.0, torch.Generator(dev).manual_seed(i))
                    for i, x in enumerate(ids)]
            solo_f0 = [single.features(x[None], ref_s[i:i + 1], 1.0)["F0"] for i, x in enumerate(ids)]
            t_solo = timed(lambda: [single.forward(x[None], ref_s[i:i + 1], 1.0, torch.Generator(dev).manual_seed(i))
                                    for i, x in enumerate(ids)])
            for placement in args.placements.split(","):
                with lstm_placement(placement):
                    outs = model.forward_batch(ids, ref_s, [1.0] * batch, gens())
                    t_batch = timed(lambda: model.forward_batch(ids, ref_s, [1.0] * batch, gens()))
                    prof = StageProfiler(dev)
                    model.forward_batch(ids, ref_s, [1.0] * batch, gens(), profile=prof)
                    feats = model._features(ids, ref_s, [1.0] * batch, None)
                f0_diff = max(scaled(feats["F0"][i:i + 1, :s.shape[-1]], s) for i, s in enumerate(solo_f0))
                same = sum(torch.equal(o.durations, s.durations) for o, s in zip(outs, solo))
                audio_diff = max(scaled(o.audio, s.audio) for o, s in zip(outs, solo))
                audio_s = sum(s.audio.numel() for s in solo) / 24000
                row = {"batch": batch, "placement": placement, "ms_batch": t_batch * 1e3, "ms_solo": t_solo * 1e3,
                       "audio_s": audio_s, "durations_identical": same, "max_f0_diff": f0_diff,
                       "max_audio_diff": audio_diff, "stages_ms": {n: round(ms, 2) for n, _, ms, _ in prof.report()}}
                report["rows"].append(row)
                print(f"B={batch:3d} lstm={placement:8s}: batch {t_batch * 1e3:8.1f} ms (x{audio_s / t_batch:7.0f} real time)"
                      f" | one by one {t_solo * 1e3:8.1f} ms | durations identical {same}/{batch} | max F0 diff "
                      f"{f0_diff:.1e} | max audio diff {audio_diff:.1e}")
                print("      stages:", row["stages_ms"])
                if args.kernels and placement == args.placements.split(",")[0]:
                    from graphs_gpu import kernel_table

                    with lstm_placement(placement):
                        row["kernels"] = kernel_table(
                            lambda: model.forward_batch(ids, ref_s, [1.0] * batch, gens()), 3,
                            args.kernels, finish=lambda outs: [o.audio.cpu() for o in outs])
                    for name, us in row["kernels"].items():
                        print(f"      {us:10.1f}  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
