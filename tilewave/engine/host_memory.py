"""Keep freed host memory in the process for reuse, on a CPU run (glibc's malloc only; elsewhere a no-op).

Why: glibc serves every block above its mmap threshold (32 MiB at most) with a fresh mmap and unmaps it on free.
Kokoro's generator on a CPU makes and drops a few hundred such blocks per utterance (each activation at its last
stage is 128 channels x 100,000 samples, ~50 MB), so each would be a new mapping whose ~12,000 pages the kernel
faults in and zeroes again: system time of the order of the convolutions' own. With mmap off for the heap and no
trimming, a freed block goes back to malloc's free lists and the next activation of that size reuses it, already
mapped: the forward is faster and its peak resident memory higher (blocks reused in a different order leave
holes; benchmarks/RESULTS.md). Like a GPU caching allocator, the process keeps its high-water mark until it exits.

A program running the engine on a CPU without a memory budget applies it (engine.process.configure_process; the
CPU benchmarks too, for the same conditions): kept blocks are memory a budget would not see, so with a budget
configure_process puts malloc's return of large blocks back for the process (with the test double of
tests/engine/test_scheduler.py a run's peak is lower with malloc as it is than with blocks kept).
TILEWAVE_HOST_MALLOC=system: never applied.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# mallopt parameters and glibc's defaults for them (malloc.h, malloc.c)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_DEFAULT_TRIM_THRESHOLD, _DEFAULT_MMAP_MAX = 128 * 1024, 65536
_state: bool | None = None  # what was last put in force (None: nothing yet)


def _libc(name: str, argtypes: tuple):
    """The C library's function `name` (returning int), or None off Linux or where the libc lacks it (musl and
    others: no mallopt)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = argtypes, ctypes.c_int
    return fn


def _mallopt():
    if os.environ.get("TILEWAVE_HOST_MALLOC", "") == "system":
        return None
    return _libc("mallopt", (ctypes.c_int, ctypes.c_int))


def keep_freed_memory(keep: bool = True) -> bool:
    """keep=True: malloc keeps freed blocks for reuse (no mmap for large blocks, the heap's top never trimmed);
    keep=False: large blocks mapped and returned on free again, as glibc does by default (its threshold no
    longer adapts once set). True when the asked-for behaviour is in force; False where it cannot be (not
    glibc, or TILEWAVE_HOST_MALLOC=system)."""
    global _state
    if _state is keep:
        return True
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # mallopt returns 1 on success; the trim threshold is an int, so 2 GiB - 1 is "never" in practice
    mmap_max, trim = (0, 2**31 - 1) if keep else (_DEFAULT_MMAP_MAX, _DEFAULT_TRIM_THRESHOLD)
    ok = bool(mallopt(_M_MMAP_MAX, mmap_max)) and bool(mallopt(_M_TRIM_THRESHOLD, trim))
    _state = keep if ok else None
    return ok


_MADV_PAGEOUT = 21  # Linux 5.4+: reclaim the range now (file-backed pages dropped, anonymous ones swapped or kept)


def page_out(tensors) -> int:
    """Ask the kernel to reclaim the whole pages of `tensors` now (madvise MADV_PAGEOUT): the bytes covered.

    Why: a bfloat16 CPU session never reads the float32 weights its decoder's bfloat16 copy replaces (~200 MB),
    but the weights file is memory-mapped and those pages were read to make the copy, so they stay resident. A
    page handed back holds the same bytes when touched again (read back from the file; an anonymous page without
    swap is simply kept), so this changes memory, never values. 0 where the kernel or libc lacks it."""
    import mmap

    madvise = _libc("madvise", (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int))
    if madvise is None:
        return 0
    page, done = mmap.PAGESIZE, 0
    for t in tensors:
        if t.device.type != "cpu":
            continue
        start = -(-t.data_ptr() // page) * page  # whole pages only: a neighbour's page stays as it is
        end = (t.data_ptr() + t.numel() * t.element_size()) // page * page
        if end > start:
            if madvise(start, end - start, _MADV_PAGEOUT) != 0:  # EINVAL: a kernel before 5.4
                return done
            done += end - start
    return done
