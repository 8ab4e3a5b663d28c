"""The AOT gate: compile every declared launch variant of every kernel for a GPU target, without a GPU.

The CPU interpreter accepts kernels that the GPU compiler rejects (a bf16 tl.dot with K < 16), and it
never shows register spills or whether tensor-core instructions were emitted. This compiles each
`AotVariant` through Triton's real NVIDIA pipeline (TTIR -> TTGIR -> LLVM -> PTX -> cubin with the
ptxas that ships in the triton wheel) and reads registers and spills from ptxas's report.
A variant fails when it does not compile, when it spills to local memory, or when it was expected to
use tensor cores (wgmma or mma) and does not. Pointer arguments are compiled as 16-byte aligned, as the runtime
specialises them, and so are the integer arguments a variant declares as multiples of 16 at its model shapes
(`AotVariant.aligned_ints`); other integers stay unspecialised.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .registry import AotVariant, Kernel, Registry

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


def _tool(name: str) -> str:
    import triton

    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    return str(path) if path.exists() else name


def _resource_usage(ptx: str, arch: int) -> tuple[int, int]:
    """(registers, spill-store bytes) as ptxas reports them for the kernel's PTX.

    Spill stores, not the stack frame: sin/cos keep a small local array for huge-argument range
    reduction, which is a stack frame and no spill.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        gpu = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
        text = subprocess.run([_tool("ptxas"), f"-arch={gpu}", "-v", f.name, "-o", os.devnull],
                              capture_output=True, text=True, check=True).stderr
    regs = int(re.search(r"Used (\d+) registers", text).group(1))
    spills = int(re.search(r"(\d+) bytes spill stores", text).group(1))
    return regs, spills


def _mma_kind(ptx: str) -> str:
    if "wgmma.mma_async" in ptx:
        return "wgmma"
    if re.search(r"\bmma\.sync", ptx):
        return "mma.sync"
    return "none"


def compile_variant(kernel_name: str, v: AotVariant, arch: int, out_dir: Path | None = None,
                    emit: tuple[str, ...] = ()) -> BuildResult:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    result = BuildResult(kernel_name, v.name, expect_mma=v.expect_mma)
    try:
        signature = {**v.signature, **{k: "constexpr" for k in v.constexprs}}
        # pointers 16-byte aligned, as the runtime specialises them for every torch allocation (without the
        # hint, loads and stores compile to scalar accesses the launched kernel does not have); the declared
        # integers as multiples of 16, as the runtime specialises them at model shapes
        aligned = {(v.fn.arg_names.index(name),): [["tt.divisibility", 16]]
                   for name, kind in v.signature.items() if kind.startswith("*") or name in v.aligned_ints}
        src = ASTSource(fn=v.fn, signature=signature, constexprs=dict(v.constexprs), attrs=aligned)
        compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32),
                                  options={"num_warps": v.num_warps, "num_stages": v.num_stages})
        ptx = compiled.asm["ptx"]
        result.registers, result.spill_bytes = _resource_usage(ptx, arch)
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


def run_build(registry: Registry, pattern: str | None, target: str = "sm_90", out_dir: str | None = None,
              emit: tuple[str, ...] = (), echo=print) -> list[BuildResult]:
    if os.environ.get("TRITON_INTERPRET") == "1":
        raise RuntimeError("tilewave build compiles for the GPU: unset TRITON_INTERPRET")
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {sorted(TARGETS)}")
    if len(registry) == 0:
        raise RuntimeError("the kernel registry is empty: nothing to build")
    kernels: list[Kernel] = registry.select(pattern)
    variants = [(k, v) for k in kernels for v in (k.variants() if k.variants else [])]
    if not variants:
        raise RuntimeError(f"no compile variants match pattern={pattern!r}")
    path = None
    if out_dir:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
    echo(f"# {len(variants)} variants of {len(kernels)} kernels for {target}")
    results = [BuildResult(k.name, "-", error="declares no compile variants")
               for k in kernels if not k.variants]
    for r in results:
        echo(r.line())
    for k, v in variants:
        r = compile_variant(k.name, v, TARGETS[target], path, emit)
        echo(r.line())
        results.append(r)
    failed = sum(not r.passed for r in results)
    echo(f"{len(results) - failed} passed, {failed} failed")
    return results
