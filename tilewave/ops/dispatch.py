"""Placement: run an op on its Triton kernel or on the stock PyTorch op, and record which ran and why.

Rule: the Triton kernel runs when every tensor argument is on a CUDA device, the backend allows it
(`backend("torch")` forces PyTorch everywhere, e.g. to build a reference), and the kernel covers the
case (an op passes `supported=False` with a reason otherwise). Everything else takes the PyTorch path,
so the engine always works on a CPU and is fast where a GPU is present. `placements()` lists what ran
where in the process; `counting(counter)` counts a caller's own (an engine session's, inside its batches), and
`tilewave say --profile` prints the session's so a fallback on the GPU is never silent.
The kernel modules (and triton) are imported by the first call that takes the Triton path (`kernels`): a CPU
process runs the PyTorch forms of tilewave.reference and never imports them.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
from collections import Counter
from types import ModuleType
from typing import Callable

import torch

_BACKENDS = ("auto", "torch", "triton")
_backend: contextvars.ContextVar[str] = contextvars.ContextVar("tilewave_backend", default="auto")
_placements: Counter = Counter()
_counters: contextvars.ContextVar[tuple[Counter, ...]] = contextvars.ContextVar("tilewave_placement_counters",
                                                                               default=())


@contextlib.contextmanager
def backend(name: str):
    """'auto' (Triton on CUDA tensors), 'torch' (PyTorch everywhere) or 'triton' (Triton or an error)."""
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {_BACKENDS}")
    token = _backend.set(name)
    try:
        yield
    finally:
        _backend.reset(token)


@contextlib.contextmanager
def counting(counter: Counter):
    """Inside: every placement is also counted in `counter`, keyed (op, where, why) as placements() lists them."""
    token = _counters.set(_counters.get() + (counter,))
    try:
        yield counter
    finally:
        _counters.reset(token)


def _record(key: tuple[str, str, str]) -> None:
    _placements[key] += 1
    for counter in _counters.get():
        counter[key] += 1


def current_backend() -> str:
    """The backend in force ('auto' outside any backend() block)."""
    return _backend.get()


@functools.cache  # every Triton launch asks: a cached lookup, far cheaper than import_module (a launch-bound path)
def kernels(family: str) -> ModuleType:
    """tilewave.kernels.<family> (its Triton launchers and limits), imported on the first use."""
    return importlib.import_module(f"tilewave.kernels.{family}")


def use_triton(op: str, *tensors: torch.Tensor | None, supported: bool | Callable[[], tuple[bool, str]] = True,
               reason: str = "") -> bool:
    """Decide where `op` runs for these arguments, record the decision, and return True for Triton.

    supported: whether the kernel covers this call, or, where that needs the kernel module's limits, a function
    returning (covered, reason), called only for CUDA tensors (so a CPU call never imports the kernel module).
    """
    mode = _backend.get()
    on_cuda = all(t.is_cuda for t in tensors if t is not None)
    if mode != "torch" and on_cuda and callable(supported):
        supported, reason = supported()
    if mode == "torch":
        why = "backend=torch"
    elif not on_cuda:
        why = "tensors on cpu"
    elif not supported:
        why = reason or "case not covered by the kernel"
    else:
        _record((op, "triton", ""))
        return True
    if mode == "triton" and why != "backend=torch":
        raise RuntimeError(f"{op}: backend 'triton' was requested but the kernel cannot run: {why}")
    _record((op, "torch", why))
    return False


def placements() -> list[tuple[str, str, str, int]]:
    """(op, 'triton'|'torch', reason, calls) since the last reset, most frequent first."""
    return [(op, where, why, n) for (op, where, why), n in _placements.most_common()]


def reset_placements() -> None:
    _placements.clear()
