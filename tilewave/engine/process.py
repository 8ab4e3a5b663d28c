"""Process-wide settings: the CPU threads of PyTorch's ops, the interpreter's thread switch interval, and whether
the host allocator keeps freed memory. They belong to the process, not to a session, so a library Session sets none
of them by itself (Session(threads=N) asks it to set the threads: set_threads). What runs the engine as a program
sets them once, before its sessions run, by one call of configure_process: the command line (say, batch, serve,
vocode), a Ray Serve replica, the batch job's synthesizer, and the benchmarks that measure those.
"""
from __future__ import annotations

import sys

from tilewave.errors import InputError

# The interpreter's thread switch interval while the engine serves (seconds). PyTorch releases the GIL inside every
# op, so the worker takes it back after each launch; while another thread runs Python (HTTP handlers, audio
# encoding, the caller's own threads) it waits until the holder is made to drop it: up to the interval, 5 ms by
# default, per op. At the default a graphed single beside a thread spinning in Python took many times its time
# alone; 0.5 ms keeps most of that back, and shorter starves a phonemizing neighbour (benchmarks/diag/gil.py,
# benchmarks/RESULTS.md).
SWITCH_INTERVAL_S = 0.0005


def set_threads(threads: int | None) -> None:
    """The CPU threads PyTorch's ops use, for the whole process (torch.set_num_threads); None leaves torch's
    choice: one per core, or OMP_NUM_THREADS where that is set."""
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InputError(f"threads must be a whole number of at least 1, got {threads!r}")
    import torch

    torch.set_num_threads(threads)


def configure_process(device=None, memory_budget=None, threads: int | None = None,
                      switch_interval: float | None = SWITCH_INTERVAL_S) -> None:
    """Set what the engine wants of the process it serves in. `device` and `memory_budget`: the sessions' (as given
    to Session): on a CPU without a budget, malloc keeps freed blocks for reuse (engine.host_memory: the generator's
    50 MB activations are not faulted in again), with one it returns large blocks again (a budget cannot see kept
    blocks). `threads`: set_threads. `switch_interval`: the interval at most this (see SWITCH_INTERVAL_S; shorter
    only: a process that set a shorter one keeps it; None: left as it is)."""
    from tilewave.engine.host_memory import keep_freed_memory
    from tilewave.engine.pipeline import resolve_device

    set_threads(threads)
    if switch_interval is not None and sys.getswitchinterval() > switch_interval:
        sys.setswitchinterval(switch_interval)
    if resolve_device(device).type == "cpu":
        keep_freed_memory(memory_budget is None)
