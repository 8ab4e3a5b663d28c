"""The stage profiler a run is timed with (`say --profile`, `vocode --profile`), and the one null profiler.

Models and the engine take a `Profiler` and open one `stage(name)` context per step; a run that is not
profiled passes NULL_PROFILER (or None, which `of` turns into it), whose stages time nothing.
Clocks: CUDA events on a GPU (read once at report time: no synchronisation inside the run), perf_counter on the CPU.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Protocol

import torch


class Profiler(Protocol):
    """What the models and the engine need of a profiler: one timed context per stage name."""

    def stage(self, name: str) -> contextlib.AbstractContextManager: ...


class NullProfiler:
    """A profiler whose stages time nothing."""

    def stage(self, name: str) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()


NULL_PROFILER = NullProfiler()


def of(profiler: Profiler | None) -> Profiler:
    """`profiler`, or the null profiler for None."""
    return NULL_PROFILER if profiler is None else profiler


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
