"""The AOT gate: compile every declared launch variant of every kernel for a GPU target, without a GPU.

The CPU interpreter accepts kernels that the GPU compiler rejects (a bf16 tl.dot with K < 16), and it
never shows register spills or whether tensor-core instructions were emitted. This compiles each
`AotVariant` through Triton's real NVIDIA pipeline (TTIR -> TTGIR -> LLVM -> PTX -> cubin with the
ptxas the installed Triton picks for the target) and reads registers and spills from that compile's ptxas report.
A variant fails when it does not compile, when it spills to local memory, or when it was expected to
use tensor cores (wgmma or mma) and does not. Each variant is compiled as the runtime specialises its launches
at the registry's model shapes (recorded on a GPU machine into launches.json, harness/launches.py: integers that
are multiples of 16, integers equal to 1 as constants, pointer alignment), once per distinct specialisation. A
variant no recorded launch matches is compiled in its declared form: pointers 16-byte aligned and the integers
it names in `AotVariant.aligned_ints` multiples of 16, other integers unspecialised.
"""
from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

from tilewave.spec import AotVariant, Kernel, Registry

from .launches import LaunchSpec, load_manifest, specs_for, undeclared_launches, unspecialised

TARGETS = {"sm_90": 90, "sm_80": 80, "sm_89": 89}


@dataclass
class BuildResult:
    kernel: str
    variant: str
    registers: int = 0
    spill_bytes: int = 0
    shared_bytes: int = 0
    mma: str = "none"
    error: str | None = None
    expect_mma: bool = False

    @property
    def passed(self) -> bool:
        return self.error is None and self.spill_bytes == 0 and (self.mma != "none" or not self.expect_mma)

    def line(self) -> str:
        status = "PASS" if self.passed else "FAIL"
        if self.error:
            return f"[{status}] {self.kernel} {self.variant}\n    {self.error}"
        why = ""
        if self.spill_bytes:
            why = "  <- spills to local memory"
        elif self.expect_mma and self.mma == "none":
            why = "  <- expected tensor-core instructions, found none"
        return (f"[{status}] {self.kernel} {self.variant} regs={self.registers} spill={self.spill_bytes}B "
                f"smem={self.shared_bytes}B mma={self.mma}{why}")


def _ptxas_report(log: str, what: str) -> tuple[int, int]:
    """(registers, spill-store bytes) from the `ptxas -v` report of Triton's own compile of the kernel.

    Triton's compile, not a second ptxas run: Triton picks the ptxas (3.9 compiles sm_90 with the `ptxas-blackwell`
    beside it, CUDA 13; the wheel's plain ptxas, CUDA 12.9, refuses its PTX 9.x) and its options
    (`--regAllocOptLevel=2` since 3.7), so only its report describes the cubin that runs. Spill stores, not the
    stack frame: sin/cos keep a small local array for huge-argument range reduction, which is a stack frame and no
    spill. The lines are read by their words ("Used N registers", "N bytes spill stores"), which CUDA 12.x and 13.x
    ptxas print alike.
    """
    regs = re.findall(r"Used (\d+) registers", log)
    spills = re.findall(r"(\d+) bytes spill stores", log)
    if len(regs) != 1 or len(spills) != 1:
        tail = " | ".join(log.strip().splitlines()[-6:]) or "nothing"
        raise RuntimeError(f"expected one ptxas register/spill report for {what}, found {len(regs)} (ptxas printed: {tail})")
    return int(regs[0]), int(spills[0])


def _compile_reporting(src, arch: int, options: dict):
    """triton.compile, with the ptxas report of that very compile (never a cached cubin, which has none)."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget

    log = io.StringIO()
    with knobs.compilation.scope(), knobs.nvidia.scope(), contextlib.redirect_stdout(log):
        knobs.compilation.always_compile = True
        knobs.nvidia.dump_ptxas_log = True
        compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)
    return compiled, log.getvalue()


def _mma_kind(ptx: str) -> str:
    if "wgmma.mma_async" in ptx:
        return "wgmma"
    if re.search(r"\bmma\.sync", ptx):
        return "mma.sync"
    return "none"


def compile_variant(kernel_name: str, v: AotVariant, arch: int, out_dir: Path | None = None,
                    emit: tuple[str, ...] = (), spec: LaunchSpec | None = None) -> BuildResult:
    """spec: the specialisation of a recorded launch; None: the variant's declared form."""
    from triton.compiler import ASTSource

    result = BuildResult(kernel_name, v.name if spec is None else f"{v.name} @ {spec.label()}",
                         expect_mma=v.expect_mma)
    try:
        signature = {**v.signature, **{k: "constexpr" for k in v.constexprs}}
        constexprs = dict(v.constexprs)
        if spec is None:
            # pointers 16-byte aligned, as the runtime specialises them for every torch allocation (without the
            # hint, loads and stores compile to scalar accesses the launched kernel does not have); the declared
            # integers as multiples of 16, as the runtime specialises them at model shapes
            aligned = [n for n, kind in v.signature.items() if kind.startswith("*") or n in v.aligned_ints]
            plain, free = unspecialised(v.fn)
            aligned = [n for n in aligned if n not in (free if v.signature[n].startswith("*") else plain)]
        else:
            aligned = [n for n, kind in v.signature.items()
                       if (kind.startswith("*") and n not in spec.unaligned_ptrs) or n in spec.aligned_ints]
            for name, value in spec.consts:  # an integer equal to 1 (or a None) the runtime made a constant
                signature[name] = "constexpr"
                constexprs[name] = value
        attrs = {(v.fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned if signature[n] != "constexpr"}
        src = ASTSource(fn=v.fn, signature=signature, constexprs=constexprs, attrs=attrs)
        compiled, log = _compile_reporting(src, arch, {"num_warps": v.num_warps, "num_stages": v.num_stages})
        ptx = compiled.asm["ptx"]
        result.registers, result.spill_bytes = _ptxas_report(log, f"{kernel_name} {result.variant}")
        result.shared_bytes = int(compiled.metadata.shared)
        result.mma = _mma_kind(ptx)
        if out_dir is not None:
            stem = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{kernel_name}.{v.name}")
            for kind in emit:
                data = compiled.asm[kind]
                (out_dir / f"{stem}.{kind}").write_bytes(data if isinstance(data, bytes) else data.encode())
    except Exception as exc:  # a variant that does not compile is a failed variant
        first = str(exc).strip().splitlines()
        result.error = f"{type(exc).__name__}: {' | '.join(first[:6])}"
    return result


_FORMS: list = []  # what forked workers compile, inherited at the fork (a JITFunction holds its module's globals)


def _compile_form(i: int, arch: int, out_dir: Path | None, emit: tuple[str, ...]) -> BuildResult:
    k, v, spec = _FORMS[i]
    return compile_variant(k.name, v, arch, out_dir, emit, spec)


def _compiled(forms: list, arch: int, out_dir: Path | None, emit: tuple[str, ...], jobs: int):
    """compile_variant of each form, in order; over `jobs` forked processes where there are several (each compile is
    one CPU-bound Python and ptxas run: on CI's 2 cores the gate takes half the time)."""
    global _FORMS
    if jobs <= 1 or len(forms) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for k, v, spec in forms:
            yield compile_variant(k.name, v, arch, out_dir, emit, spec)
        return
    _FORMS = forms
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            yield from pool.map(_compile_form, range(len(forms)), repeat(arch), repeat(out_dir), repeat(emit))
    finally:
        _FORMS = []


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_build(registry: Registry, pattern: str | None, target: str = "sm_90", out_dir: str | None = None,
              emit: tuple[str, ...] = (), echo=print, jobs: int = 1) -> list[BuildResult]:
    """Compile the matching kernels' variants (and the launched forms none declares) for `target`, over `jobs`
    processes; the results, and the lines echoed, in the same order whatever `jobs` is."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {sorted(TARGETS)}")
    if len(registry) == 0:
        raise RuntimeError("the kernel registry is empty: nothing to build")
    kernels: list[Kernel] = registry.select(pattern)
    variants = [(k, v) for k in kernels for v in (k.variants() if k.variants else [])]
    if not variants:
        raise RuntimeError(f"no compile variants match pattern={pattern!r}")
    from triton.runtime.jit import JITFunction

    if not all(isinstance(v.fn, JITFunction) for _, v in variants):
        raise RuntimeError("the kernels were imported under TRITON_INTERPRET=1 (Triton's CPU interpreter, which "
                           "compiles nothing): run the build in a process without TRITON_INTERPRET in its environment")
    path = None
    if out_dir:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
    launches, recorded_on = load_manifest()
    forms = [(k, v, spec) for k, v in variants for spec in (specs_for(v, launches) or [None])]
    declared = sum(spec is None for _, _, spec in forms)
    # launched constexpr combinations no variant declares: compiled too, under the kernel that launches them,
    # for the GPU the launches were recorded on (their configs are that GPU's: TMA forms do not exist on sm_80)
    by_fn = {id(v.fn): k for k, v in variants}
    every = [v for k in registry for v in (k.variants() if k.variants else [])]
    extra = [] if recorded_on != TARGETS[target] else [
        (by_fn[id(v.fn)], v, spec) for v, spec in undeclared_launches(every, launches) if id(v.fn) in by_fn]
    echo(f"# {len(variants)} variants of {len(kernels)} kernels for {target}: {len(forms)} compiled forms, "
         f"{len(forms) - declared} as recorded launches specialise them, {declared} in the declared form; "
         f"{len(extra)} launched forms no variant declares")
    forms += extra
    results = [BuildResult(k.name, "-", error="declares no compile variants")
               for k in kernels if not k.variants]
    for r in results:
        echo(r.line())
    for r in _compiled(forms, TARGETS[target], path, emit, jobs):
        echo(r.line())
        results.append(r)
    failed = sum(not r.passed for r in results)
    echo(f"{len(results) - failed} passed, {failed} failed")
    return results
