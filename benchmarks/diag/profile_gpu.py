"""Where a Kokoro or BigVGAN run's GPU time goes: its kernels by total time, beside its wall time and its floor.

Per row (a workload, a storage dtype, a precision mode):
  graphed / eager  wall time replayed from CUDA graphs and run eagerly (median of 5, CUDA events)
  kernels          the GPU time of one graphed run (eager where the row has no graphs), from torch.profiler
                   (CUPTI): the union of the kernel intervals, so work overlapping on the branch streams counts
                   once; with the launch count
  floor            the counted FLOPs of the convolutions and matmuls (model_bench.counted) at the measured
                   matmul peak of the units doing them (model_bench.floor_fraction)
  top              the kernels holding the most time, each with its launches and share of the kernel time
Graphed wall minus kernel time is the idle GPU between kernels (short launches waiting on each other); eager
minus graphed is the host's launch cost that the graphs remove.

  python3 benchmarks/diag/profile_gpu.py --json out.json            # every row, on a GPU
  python3 benchmarks/diag/profile_gpu.py --rows kokoro-383-bf16     # one row
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# name: (model, input or batch size, dtype, precision mode)
ROWS = {
    "kokoro-383-bf16": ("kokoro", "medium", "bfloat16", "tf32x3"),
    "kokoro-383-tf32": ("kokoro", "medium", "float32", "tf32"),
    "kokoro-383-tf32x3": ("kokoro", "medium", "float32", "tf32x3"),
    "kokoro-383-ieee": ("kokoro", "medium", "float32", "ieee"),
    "kokoro-77-bf16": ("kokoro", "short", "bfloat16", "tf32x3"),
    "kokoro-batch64-bf16": ("kokoro-batch", 64, "bfloat16", "tf32x3"),
    "bigvgan-10s-tf32x3": ("bigvgan", 10.0, "float32", "tf32x3"),
    "bigvgan-10s-bf16": ("bigvgan", 10.0, "bfloat16", "tf32x3"),
}
TOP = 10
DEVICE = "cuda"  # a module constant so that a CPU check can run the workloads


def _median_ms(fn, reps: int = 5, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def kernel_profile(fn) -> dict:
    """One run of fn under torch.profiler: the kernels' union time, launches and per-name totals (µs)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    spans, by_name = [], defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type != DeviceType.CUDA or "memcpy" in e.name.lower() or "memset" in e.name.lower():
            continue
        spans.append((e.time_range.start, e.time_range.end))
        by_name[e.name][0] += e.time_range.end - e.time_range.start
        by_name[e.name][1] += 1
    busy, last = 0.0, float("-inf")
    for start, end in sorted(spans):  # the union: overlapping kernels (branch streams) count once
        if end > last:
            busy += end - max(start, last)
            last = end
    total = sum(t for t, _ in by_name.values()) or 1.0
    top = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:TOP]
    return {"kernel_us": busy, "kernel_sum_us": total if spans else 0.0, "launches": len(spans),
            "top": [{"kernel": name[:90], "us": round(t, 1), "launches": n, "share": t / total}
                    for name, (t, n) in top]}


def workload(name: str):
    """(eager fn, graphed fn or None, FLOPs, audio seconds) for a row, its inputs on the GPU."""
    from tilewave.harness import model_bench as MB
    from tilewave.precision import torch_dtype

    model_name, what, dtype, _ = ROWS[name]
    dev = DEVICE
    if model_name == "bigvgan":
        from tilewave.ops.graphs import GraphCache

        w = MB.vocoder_workload("bigvgan", dev, getattr(torch, dtype), what)
        model, x = w["model"], w["x"]
        graphs = GraphCache(max_graphs=1)
        return (lambda: model(x), lambda: graphs.run(("profile", tuple(x.shape)), lambda v: (model(v),), (x,))[0],
                MB.counted(lambda: model(x))[1], w["audio_s"])
    from tilewave.engine.runner import KokoroRunner
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.text.vocab import encode

    model, _ = MB.load_kokoro(dev, dtype)
    pack, dt = load_voice(MB.VOICE), torch_dtype(dtype)
    if model_name == "kokoro-batch":
        sentences = MB.batch_sentences(None, what)
        ids = [encode(ps)[0].to(dev) for ps in sentences]
        ref_s = torch.cat([style_for(pack, len(ps)).reshape(1, -1) for ps in sentences]).to(dev)

        def padded():
            gens = [torch.Generator(dev).manual_seed(i) for i in range(len(ids))]
            return model.forward_batch(ids, ref_s, [1.0] * len(ids), gens, dtype=dt)

        flop = sum(MB.counted(lambda: model(x[None], ref_s[i:i + 1], 1.0))[1] for i, x in enumerate(ids))
        audio_s = sum(o.audio.numel() for o in padded()) / MB.SAMPLE_RATE
        return padded, None, flop, audio_s
    ps = MB.read_inputs(None)[what]
    ids, ref_s = encode(ps).to(dev), style_for(pack, len(ps)).to(dev)
    runner = KokoroRunner(model, cuda_graphs=True)

    def call(forward):
        return lambda: forward(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(0), dtype=dt)

    flop = MB.counted(lambda: model(ids, ref_s, 1.0))[1]
    return call(model), call(runner.forward), flop, call(model)().audio.numel() / MB.SAMPLE_RATE


def profile_row(name: str, peaks: dict) -> dict:
    from tilewave.harness.model_bench import floor_fraction
    from tilewave.precision import scope

    _, _, dtype, mode = ROWS[name]
    with scope(mode):
        eager, graphed, flop, audio_s = workload(name)
        eager_ms = _median_ms(eager)
        graphed_ms = _median_ms(graphed) if graphed else None
        prof = kernel_profile(graphed or eager)
        if graphed and not prof["launches"]:  # this CUPTI shows no kernels inside a graph: profile eager
            prof = dict(kernel_profile(eager), from_eager=True)
    wall = graphed_ms or eager_ms
    floor = floor_fraction(flop, 1.0, mode, dtype, peaks)  # the floor's time: FLOPs at the peak, in seconds
    return {"row": name, "dtype": dtype, "precision": mode, "audio_s": audio_s, "eager_ms": eager_ms,
            "graphed_ms": graphed_ms, "x_real_time": audio_s / (wall / 1e3), "gflop": flop / 1e9,
            "floor_ms": None if floor is None else floor * 1e3, "kernel_ms": prof["kernel_us"] / 1e3,
            "kernel_share_of_wall": prof["kernel_us"] / 1e3 / wall, **prof}


def format_row(r: dict) -> str:
    graphed = "n/a" if r["graphed_ms"] is None else f"{r['graphed_ms']:.2f}"
    floor = "n/a" if r["floor_ms"] is None else f"{r['floor_ms']:.2f}"
    lines = [f"## {r['row']} ({r['dtype']}, {r['precision']}): {r['audio_s']:.2f} s of audio, {r['gflop']:.1f} GFLOP",
             f"graphed {graphed} ms ({r['x_real_time']:,.0f}x), eager {r['eager_ms']:.2f} ms, kernels "
             f"{r['kernel_ms']:.2f} ms in {r['launches']} launches ({r['kernel_share_of_wall']:.0%} of the wall"
             f"{', profiled eager' if r.get('from_eager') else ''}), floor {floor} ms",
             "| kernel | µs | launches | share |", "|---|---|---|---|"]
    lines += [f"| {t['kernel']} | {t['us']:,.0f} | {t['launches']} | {t['share']:.1%} |" for t in r["top"]]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of: {', '.join(ROWS)}")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("profile_gpu.py needs a GPU")
    unknown = set(args.rows.split(",")) - set(ROWS)
    if unknown:
        sys.exit(f"unknown rows {sorted(unknown)}; known: {', '.join(ROWS)}")
    import triton

    from tilewave.harness.peaks import device_peaks

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "peaks": device_peaks(), "rows": []}
    print(f"# {report['gpu']}, torch {report['torch']}, triton {report['triton']}", flush=True)
    for name in args.rows.split(","):
        try:
            row = profile_row(name, report["peaks"])
        except Exception as exc:  # one row failing leaves the others' figures
            print(f"## {name}: FAILED {type(exc).__name__}: {exc}", flush=True)
            report["rows"].append({"row": name, "error": repr(exc)})
            continue
        report["rows"].append(row)
        print(format_row(row), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
