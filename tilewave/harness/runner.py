"""The kernel test runner: every selected case on seeded random inputs, against the float64 oracle.

Outputs are poisoned with NaN before each launch, so an element that the kernel never writes fails.
Inputs are drawn in the storage dtype and the oracle sees exactly those values, upcast to float64.
"""
from __future__ import annotations

import os
import secrets
import traceback
import zlib
from dataclasses import dataclass
from typing import Any

import torch

from tilewave.spec import Kernel, Registry, dtype_of
from tilewave.spec.tolerance import scaled_max_error


@dataclass
class CaseResult:
    kernel: str
    dtype: str
    label: str
    device: str
    seed: int
    max_err: float
    tol: float
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.max_err <= self.tol

    def line(self) -> str:
        status = "PASS" if self.passed else "FAIL"
        text = f"[{status}] {self.kernel} {self.dtype} {self.label} max_err={self.max_err:.1e} (tol {self.tol:.0e})"
        if not self.passed:
            text += f" seed={self.seed}"
        if self.error:
            text += f"\n    {self.error}"
        return text


def default_seed() -> int:
    """TILEWAVE_SEED reproduces a run; otherwise every run draws new inputs (the seed is printed)."""
    env = os.environ.get("TILEWAVE_SEED")
    return int(env) if env else secrets.randbelow(2**31)


def case_seed(base: int, kernel: str, index: int, dtype: str) -> int:
    return (base + zlib.crc32(f"{kernel}/{index}/{dtype}".encode())) % 2**31


def _as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def _poison(t: torch.Tensor) -> None:
    if t.is_floating_point():
        t.fill_(float("nan"))
    else:
        t.fill_(torch.iinfo(t.dtype).min)


def to_oracle(value: Any) -> Any:
    """What an oracle receives: float tensors upcast to float64 on the CPU, everything else as is."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.to(torch.float64) if value.is_floating_point() else value
    return value


def run_case(kernel: Kernel, index: int, dtype: str, device: str, base_seed: int) -> CaseResult:
    case = kernel.cases[index]
    seed = case_seed(base_seed, kernel.name, index, dtype)
    tol = kernel.tolerance(case.params, dtype)
    result = CaseResult(kernel.name, dtype, case.label, device, seed, float("inf"), tol)
    try:
        gen = torch.Generator().manual_seed(seed)
        inputs = kernel.make_inputs(case.params, dtype_of(dtype), device, gen)
        outs = _as_tuple(kernel.alloc_out(inputs))
        for o in outs:
            _poison(o)
        kernel.launch(**inputs, out=outs if len(outs) > 1 else outs[0])
        if device == "cuda":
            torch.cuda.synchronize()
        refs = _as_tuple(kernel.oracle(**{k: to_oracle(v) for k, v in inputs.items()}))
        if len(refs) != len(outs):
            raise ValueError(f"oracle gave {len(refs)} outputs, kernel {len(outs)}")
        result.max_err = max(scaled_max_error(o, r) for o, r in zip(outs, refs))
    except Exception as exc:  # a crashing case is a failed case, reported with its seed
        result.error = f"{type(exc).__name__}: {exc}"
        if os.environ.get("TILEWAVE_TRACEBACK"):
            result.error += "\n" + traceback.format_exc()
    return result


def iter_cases(kernels: list[Kernel], device: str):
    """(kernel, case index, dtype) for every case that runs on `device`."""
    for k in kernels:
        for i, case in enumerate(k.cases):
            if device not in case.devices:
                continue
            for dtype in k.dtypes:
                if case.dtypes is None or dtype in case.dtypes:
                    yield k, i, dtype


def run_tests(registry: Registry, pattern: str | None, device: str, base_seed: int | None = None,
              echo=print) -> list[CaseResult]:
    """Run every selected case; raise if the selection is empty (an empty run must never pass)."""
    if len(registry) == 0:
        raise RuntimeError("the kernel registry is empty: no kernel modules registered anything")
    base_seed = default_seed() if base_seed is None else base_seed
    selected = list(iter_cases(registry.select(pattern), device))
    if not selected:
        raise RuntimeError(f"no test cases match pattern={pattern!r} on device={device!r}")
    echo(f"# {len(selected)} cases on {device}, seed {base_seed} (TILEWAVE_SEED={base_seed} reproduces)")
    results = []
    for k, i, dtype in selected:
        r = run_case(k, i, dtype, device, base_seed)
        echo(r.line())
        results.append(r)
    failed = sum(not r.passed for r in results)
    echo(f"{len(results) - failed} passed, {failed} failed")
    return results
