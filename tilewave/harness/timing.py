"""The one timing function (kernel benchmarks) and the stage profiler (engine profiles).

Both read the device clock: CUDA events on a GPU, perf_counter on the CPU.
"""
from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass, field

import torch

_L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current L2 (H200: 50 MB)
_L2_CLEAN_BYTES = 128 * 1024 * 1024  # read after the flush: the L2 then holds clean lines only


@dataclass
class Timing:
    median_us: float
    min_us: float
    max_us: float
    reps: int


_spin_cycles_per_us: float | None = None


def _spin_rate() -> float:
    """Cycles of torch.cuda._sleep per µs on this device, measured once."""
    global _spin_cycles_per_us
    if _spin_cycles_per_us is None:
        torch.cuda._sleep(1_000)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.cuda._sleep(2_000_000)
        e.record()
        e.synchronize()
        _spin_cycles_per_us = 2_000_000 / max(s.elapsed_time(e) * 1e3, 1.0)
    return _spin_cycles_per_us


def time_cuda(fn, warmup: int = 10, reps: int = 100, flush_l2: bool = True) -> Timing:
    """Median device time of fn() over `reps` runs after `warmup`, with CUDA events around each run.

    flush_l2 (kernel benchmarks): before each run the L2 is flushed outside the timed region (a 256 MB write,
    then a 128 MB read), so that a model-sized input comes from HBM as it would inside a model; the read leaves
    the L2 holding clean lines (after the write alone ~50 MB of dirty lines were written back during fn: ~6-12
    µs on the H200, charged to whatever was timed). Before the flush the device spins for twice fn's host
    launch time, so the host has queued fn before the GPU reaches it: the events bracket fn's device time, not
    Python's launch overhead (which time_cuda used to include whenever it exceeded the flush's ~80 µs).
    Without flush_l2 (end-to-end runs, peaks) nothing precedes fn: where the host is slower than the GPU, the
    GPU waits inside the timed region, so the time includes the host's launch cost.
    """
    flush = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    clean = torch.zeros(_L2_CLEAN_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    host = []
    for _ in range(warmup):
        t0 = time.perf_counter()
        fn()
        host.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    spin = int(_spin_rate() * (2e6 * min(host, default=1e-4) + 20.0)) if flush_l2 else 0
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        if flush is not None:
            torch.cuda._sleep(spin)
            flush.zero_()
            clean.max()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]
    return Timing(statistics.median(times), min(times), max(times), reps)


@dataclass
class _Stage:
    name: str
    depth: int
    ms: float = 0.0
    calls: int = 0
    pending: list = field(default_factory=list)


class StageProfiler:
    """Time named stages of one run (nested stages allowed; a stage entered again accumulates).

    with prof.stage("generator"): ...      then prof.report() -> [(name, depth, ms, share_of_total)]
    On CUDA the stages are bracketed by events and read once at report time, so profiling adds no
    synchronisation inside the run; the total is the sum of the top-level stages.
    """

    def __init__(self, device: str | torch.device = "cpu") -> None:
        self.cuda = torch.device(device).type == "cuda"
        self._stages: dict[str, _Stage] = {}
        self._depth = 0

    @contextlib.contextmanager
    def stage(self, name: str):
        st = self._stages.setdefault(name, _Stage(name, self._depth))
        self._depth += 1
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        else:
            t0 = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            st.calls += 1
            if self.cuda:
                end.record()
                st.pending.append((start, end))
            else:
                st.ms += (time.perf_counter() - t0) * 1e3

    def report(self) -> list[tuple[str, int, float, float]]:
        if self.cuda:
            torch.cuda.synchronize()
            for st in self._stages.values():
                st.ms += sum(s.elapsed_time(e) for s, e in st.pending)
                st.pending.clear()
        total = sum(st.ms for st in self._stages.values() if st.depth == 0) or 1.0
        return [(st.name, st.depth, st.ms, st.ms / total) for st in self._stages.values()]

    def format(self, title: str = "stage") -> str:
        rows = self.report()
        width = max([len(title)] + [len(n) + 2 * d for n, d, _, _ in rows])
        lines = [f"{title:<{width}}  {'ms':>9}  {'share':>6}"]
        for name, depth, ms, share in rows:
            lines.append(f"{'  ' * depth + name:<{width}}  {ms:9.2f}  {share:6.1%}")
        top = sum(ms for _, d, ms, _ in rows if d == 0)
        lines.append(f"{'total':<{width}}  {top:9.2f}")
        return "\n".join(lines)
