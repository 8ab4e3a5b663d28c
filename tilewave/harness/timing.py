"""The timing of the benchmarks: `time_cuda`, CUDA events around each run (the kernel benchmarks), and
`time_model`, a whole model call on either device (the model benchmarks). The engine's stage profiler, which reads
the same clocks, is tilewave.profiling."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

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
    the L2 holding clean lines (after the write alone, the L2's dirty lines would be written back during fn and
    charged to whatever was timed). Before the flush the device spins for twice fn's host launch time, so the
    host has queued fn before the GPU reaches it: the events bracket fn's device time, not Python's launch
    overhead, even where that overhead is longer than the flush.
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


def time_model(fn, device, warmup: int = 2, reps: int = 5) -> Timing:
    """Median time of a whole model call fn() on `device`: on a GPU time_cuda without the L2 flush (host launch
    cost included, as a caller sees it); on the CPU perf_counter around each run, whose clock is the work's."""
    if torch.device(device).type == "cuda":
        return time_cuda(fn, warmup=warmup, reps=reps, flush_l2=False)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return Timing(statistics.median(times), min(times), max(times), reps)
