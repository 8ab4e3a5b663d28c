"""Where the server's slow batches go: bench_server.py run with every Triton compile and every batch timed.

    python benchmarks/diag/server_gpu.py [--passes 2] [bench_server.py's arguments ...]

The load test (bench_server.py, its own arguments passed through) runs `--passes` times in one process. Recorded
meanwhile: every Triton JIT compile (JITFunction._do_compile: kernel, specialisation key, seconds, thread), every
batch the schedulers run (Scheduler._run: size, longest chunk's frames, seconds, whether a server's warm-up ran
it), and, for a batch still running after --sample-after seconds, its worker thread's Python stack every 0.25 s.
Printed per pass: the compiles in the servers' warm-ups and after them, the batches slower than --slow seconds with
the compiles that ran inside them, the batches after the warm-ups summed per mode and size, the compiles' count
and seconds per kernel, and the innermost tilewave / triton / torch frames of the sampled stacks (where a stalled
batch waits). A compile after the warm-ups means a specialisation they did not make: what they must cover.
With --parts, a batch of one item (a graphed single) is also timed part by part, with a synchronize around each
(each graph replay, the harmonic source, the iSTFT; the rest of the model call is host code and read-backs), and
the graphs recorded inside it counted: medians per mode, to tell where the batching server's singles lose to the
same singles served one at a time (S17c-S19c: a model call 2.3-2.9x as long).
"""
from __future__ import annotations

import argparse
import collections
import runpy
import statistics
import sys
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

compiles: list[dict] = []   # {"t0", "s", "kernel", "key", "thread"}
batches: list[dict] = []    # {"t0", "s", "size", "frames", "thread"}
samples: list[tuple] = []   # (batch t0, frames summary)
_running: dict[int, tuple[float, dict]] = {}  # worker thread ident -> (start, batch record)
_warming: list = []  # the sessions inside warm_up_serving now
_lock = threading.Lock()


def _single() -> dict | None:
    """The record of the batch of one running on this thread, if any (--parts)."""
    entry = _running.get(threading.get_ident())
    return entry[1] if entry is not None and entry[1]["size"] == 1 and not entry[1]["warm_up"] else None


def install_parts() -> None:
    import torch

    from tilewave.models.kokoro import modules
    from tilewave.ops import graphs, spectral

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            record = _single()
            if record is None:
                return fn(*args, **kwargs)
            sync()
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            sync()
            parts = record.setdefault("parts", {})
            label = name if isinstance(name, str) else name(args)
            parts[label] = parts.get(label, 0.0) + time.perf_counter() - t0
            return out
        return wrapper

    graphs.GraphCache.run = timed(lambda a: f"graph {a[1][0] if isinstance(a[1], tuple) else a[1]}",
                                  graphs.GraphCache.run)
    capture = graphs.GraphCache._capture

    def counted_capture(self, *args, **kwargs):
        record = _single()
        if record is not None:
            record["captures"] = record.get("captures", 0) + 1
        return capture(self, *args, **kwargs)

    graphs.GraphCache._capture = counted_capture
    modules.Generator.source = timed("harmonic source", modules.Generator.source)
    spectral.istft_exp_sin = timed("istft", spectral.istft_exp_sin)


def install() -> None:
    from triton.runtime import jit
    from tilewave.engine import scheduler

    # the compile on a cache miss: JITFunction._do_compile where it exists (triton 3.6-3.9 here)
    original = jit.JITFunction._do_compile

    def timed_compile(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            name = getattr(getattr(self, "fn", None), "__qualname__", None) or repr(self)
            with _lock:
                compiles.append({"t0": t0, "s": time.perf_counter() - t0, "kernel": name,
                                 "key": str(args[0])[:300] if args else "", "thread": threading.current_thread().name})

    jit.JITFunction._do_compile = timed_compile
    run = scheduler.Scheduler._run
    from tilewave.engine import session

    warm_up = session.Session.warm_up_serving

    def timed_warm_up(self, *args, **kwargs):  # the servers' warm-ups, before they say ready
        _warming.append(self)
        try:
            return warm_up(self, *args, **kwargs)
        finally:
            _warming.remove(self)

    session.Session.warm_up_serving = timed_warm_up

    def timed_run(self, batch):
        record = {"t0": time.perf_counter(), "size": len(batch), "frames": max(r.jobs[i].frames for r, i in batch),
                  "thread": threading.current_thread().name, "max_batch": self.max_batch, "warm_up": bool(_warming),
                  "threads": threading.active_count()}
        _running[threading.get_ident()] = (record["t0"], record)
        try:
            return run(self, batch)
        finally:
            _running.pop(threading.get_ident(), None)
            record["s"] = time.perf_counter() - record["t0"]
            with _lock:
                batches.append(record)

    scheduler.Scheduler._run = timed_run
    forward = scheduler.Scheduler._forward

    def timed_forward(self, batch):  # the model call alone, inside _run (the rest: generator states, results)
        t0 = time.perf_counter()
        try:
            return forward(self, batch)
        finally:
            entry = _running.get(threading.get_ident())
            if entry is not None:
                entry[1]["forward_s"] = entry[1].get("forward_s", 0.0) + time.perf_counter() - t0

    scheduler.Scheduler._forward = timed_forward


def sampler(after: float, stop: threading.Event) -> None:
    while not stop.wait(0.25):
        now = time.perf_counter()
        frames = sys._current_frames()
        for ident, (t0, _) in list(_running.items()):
            if now - t0 < after or ident not in frames:
                continue
            stack = traceback.extract_stack(frames[ident])
            # the innermost frame (what it waits in) and the innermost three of ours (who called it)
            ours = [f for f in stack if "tilewave" in f.filename][-3:]
            inner = [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in [stack[-1], *reversed(ours)]]
            samples.append((t0, " <- ".join(inner)))


def report(pass_no: int, since: float, slow: float) -> None:
    mine = [b for b in batches if b["t0"] >= since]
    made = [c for c in compiles if c["t0"] >= since]
    print(f"\n## pass {pass_no}: {len(mine)} batches, {len(made)} Triton compiles, "
          f"{sum(c['s'] for c in made):.1f} s compiling")
    warming = [b for b in mine if b["warm_up"]]
    in_warm_up = [c for c in made if any(b["t0"] <= c["t0"] <= b["t0"] + b["s"] for b in warming)]
    print(f"of which in the servers' warm-ups (before ready): {len(warming)} batches, {len(in_warm_up)} compiles, "
          f"{sum(c['s'] for c in in_warm_up):.1f} s; after: {len(made) - len(in_warm_up)} compiles, "
          f"{sum(c['s'] for c in made) - sum(c['s'] for c in in_warm_up):.1f} s")
    for b in sorted(mine, key=lambda b: -b["s"])[:12]:  # the slowest, warm-up batches marked
        inside = [c for c in made if b["t0"] <= c["t0"] <= b["t0"] + b["s"]]
        if b["s"] < slow and not inside:
            continue
        print(f"- {'warm-up ' if b['warm_up'] else ''}batch of {b['size']}, {b['frames']} frames, {b['thread']}: "
              f"{b['s'] * 1e3:.0f} ms; "
              f"{len(inside)} compiles inside ({sum(c['s'] for c in inside):.2f} s)")
        for c in inside[:30]:
            print(f"    {c['s'] * 1e3:7.0f} ms  {c['kernel']}  {c['key'][:160]}")
        where = collections.Counter(s for t0, s in samples if t0 == b["t0"])
        for stack, n in where.most_common(4):
            print(f"    sampled {n}x: {stack}")
    # by scheduler (max_batch 1 is bench_server's one-at-a-time) and batch size: where each mode's device time goes
    # (a batch of one replays the single-item CUDA graphs, a larger one runs eager)
    print("batches after the warm-ups by mode and size (count, median ms, median ms per item, median frames, "
          "seconds in all, median ms in the model call, median Python threads alive):")
    sizes = collections.defaultdict(list)
    for b in mine:
        if not b["warm_up"]:
            sizes[("one-at-a-time" if b["max_batch"] == 1 else "tilewave", b["size"])].append(b)
    for (mode, size), bs in sorted(sizes.items()):
        if size == 1 and any("parts" in b for b in bs):  # --parts: the singles' parts, medians, ms
            names = sorted({n for b in bs for n in b.get("parts", {})})
            cells = [f"{n} {statistics.median(b.get('parts', {}).get(n, 0.0) for b in bs) * 1e3:.1f}" for n in names]
            rest = statistics.median(b.get("forward_s", 0.0) - sum(b.get("parts", {}).values()) for b in bs)
            print(f"  {mode} singles' parts (median ms, a sync around each): {', '.join(cells)}; the rest of the "
                  f"model call {rest * 1e3:.1f}; graphs recorded in them {sum(b.get('captures', 0) for b in bs)}")
        ms = sorted(b["s"] * 1e3 for b in bs)
        frames = sorted(b["frames"] for b in bs)
        model_ms = sorted(b.get("forward_s", 0.0) * 1e3 for b in bs)
        threads = sorted(b["threads"] for b in bs)
        print(f"  {mode:14s} {size:3d}  {len(bs):4d}  {ms[len(ms) // 2]:8.1f}  {ms[len(ms) // 2] / size:7.1f}  "
              f"{frames[len(frames) // 2]:6d}  {sum(ms) / 1e3:6.2f}  {model_ms[len(ms) // 2]:8.1f}  "
              f"{threads[len(threads) // 2]:3d}")
    per = collections.defaultdict(lambda: [0, 0.0])
    for c in made:
        per[c["kernel"]][0] += 1
        per[c["kernel"]][1] += c["s"]
    print("compiles per kernel (count, seconds):")
    for name, (n, s) in sorted(per.items(), key=lambda kv: -kv[1][1])[:25]:
        print(f"  {n:3d}  {s:6.2f} s  {name}")
    outside = [c for c in made if not any(b["t0"] <= c["t0"] <= b["t0"] + b["s"] for b in mine)]
    print(f"compiles outside any batch: {len(outside)} ({sum(c['s'] for c in outside):.1f} s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--slow", type=float, default=1.0, help="report batches slower than this, seconds")
    ap.add_argument("--sample-after", type=float, default=1.5, help="sample the stack of a batch running this long")
    ap.add_argument("--parts", action="store_true", help="time a single's parts (graphs, source, iSTFT) apart")
    args, rest = ap.parse_known_args()
    install()
    if args.parts:
        install_parts()
    stop = threading.Event()
    threading.Thread(target=sampler, args=(args.sample_after, stop), daemon=True).start()
    status = 0
    for p in range(args.passes):
        since = time.perf_counter()
        sys.argv = ["bench_server.py", *rest]
        try:
            runpy.run_path(str(ROOT / "benchmarks" / "bench_server.py"), run_name="__main__")
        except SystemExit as exc:
            status = status or (exc.code or 0)
        report(p + 1, since, args.slow)
    stop.set()
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
