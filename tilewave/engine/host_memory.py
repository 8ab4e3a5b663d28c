"""Keep freed host memory in the process for reuse, on a CPU run (glibc's malloc only; elsewhere a no-op).

Why: glibc serves every block above its mmap threshold (32 MiB at most) with a fresh mmap and unmaps it on free.
Kokoro's generator on a CPU makes and drops a few hundred such blocks per utterance (each activation at its last
stage is 128 channels x 100,000 samples, ~50 MB), so each was a new mapping whose ~12,000 pages the kernel faulted
in and zeroed again: 1.6 million page faults and 3.4-5.2 s of system time for a 21 s utterance whose convolutions
take 3.2 s (benchmarks/RESULTS.md, session 8). With mmap off for the heap and no trimming, a freed block goes
back to malloc's free lists and the next activation of that size reuses it, already mapped: the same forward went
from 7.5-9.7 s to 5.0-5.2 s, peak resident memory 1,228 -> 1,649 MiB (blocks reused in a different order leave
holes). Like a GPU caching allocator, the process keeps its high-water mark until it exits.

Applied once per process by a CPU Session (and by the CPU benchmarks, for the same conditions);
TILEWAVE_HOST_MALLOC=system leaves malloc as it was.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# mallopt parameters, glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Make malloc keep freed blocks for reuse (no mmap for large blocks, no trimming of the heap's top). True
    when in force; False where it cannot be (not glibc) or TILEWAVE_HOST_MALLOC=system. Idempotent."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if os.environ.get("TILEWAVE_HOST_MALLOC", "") == "system" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others: no mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success; the trim threshold is an int, so 2 GiB - 1 is "never" in practice
    _applied = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
    return _applied
