"""What a kernel declares, and the one registry that holds the declarations.

Each kernel module registers its kernels here once, with everything needed to check and time them:
the Triton launch function, a readable float64 oracle, the stock PyTorch peer, an input generator,
the test cases, the benchmark shapes (FLOPs and minimal bytes declared), the compile variants that
the AOT gate builds and the models that use it. The tools above the kernels (tilewave.harness: the test
runner, the pytest bridge, the bench runner and `tilewave build`) read this registry and nothing else, so a
kernel that is registered is checked everywhere. This package sits below the kernels and imports none.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

from tilewave.spec.tolerance import dtype_name, tolerance

Tensors = torch.Tensor | tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class Case:
    """One test configuration: named parameters that the kernel's `make_inputs` understands.

    devices: where the case runs ('cpu' is the Triton interpreter, so keep those shapes small).
    dtypes: restricts the kernel's dtypes for this case (None = all of them).
    """
    params: dict[str, Any]
    devices: tuple[str, ...] = ("cpu", "cuda")
    dtypes: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        parts = [str(list(self.params["shape"]))] if "shape" in self.params else []
        parts += [f"{k}={v}" for k, v in self.params.items() if k != "shape"]
        return " ".join(parts)


@dataclass(frozen=True)
class BenchShape:
    """A benchmark shape from a real model, with its work declared.

    flops(params) -> floating-point operations of one call (multiply-add = 2).
    bytes(params, itemsize) -> minimal bytes moved: each input read once, each output written once.
    """
    label: str
    params: dict[str, Any]
    flops: Callable[[dict[str, Any]], float]
    bytes: Callable[[dict[str, Any], int], float]
    dtypes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AotVariant:
    """One compiled form of a kernel, as `tilewave build` compiles it for a GPU target without a GPU.

    signature maps each non-constexpr argument to a Triton type string ('*fp32', 'i32', 'fp32', ...);
    constexprs maps constexpr arguments to values. expect_mma: the variant must use tensor-core
    instructions on the target (wgmma on sm_90). aligned_ints: integer arguments that are multiples of 16 at the
    kernel's model shapes (strides of rows of 64 or 128 elements, ...): the runtime specialises such values, and
    what it launches can differ a lot from the unspecialised form (e.g. the decode split kernel's K/V loads are
    only pipelined through cp.async when its strides are known multiples of 16), so the gate compiles that form.
    """
    name: str
    fn: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    num_warps: int = 4
    num_stages: int = 3
    expect_mma: bool = False
    aligned_ints: tuple[str, ...] = ()


@dataclass
class Kernel:
    name: str
    family: str
    doc: str
    make_inputs: Callable[[dict, torch.dtype, str, torch.Generator], dict[str, Any]]
    alloc_out: Callable[[dict[str, Any]], Tensors]
    launch: Callable[..., Tensors]
    oracle: Callable[..., Tensors]
    peer: Callable[..., Tensors]  # the stock op; called with the inputs less `precision` (see bench._peer_precision)
    cases: list[Case]
    bench: list[BenchShape]
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")
    tol_kind: str = "pointwise"
    variants: Callable[[], list[AotVariant]] | None = None
    # the unit whose rate is the kernel's FLOP roofline: "matmul" = the tensor cores at its precision (16-bit
    # storage: the 16-bit rate), "float32" = float32 FMAs on the CUDA cores whatever the storage dtype
    arithmetic: str = "matmul"
    # the models whose ops run this kernel ("kokoro", "bigvgan", "causal_decoder"); () for a catalogue kernel that
    # no model of ours calls yet. None (undeclared) fails test_kernel_is_fully_declared.
    used_by: tuple[str, ...] | None = None

    def tolerance_row(self, params: dict[str, Any], dtype: str) -> str:
        """The tolerance row: a case's matmul precision when it is looser than the storage dtype."""
        if params.get("precision") == "tf32" and dtype == "float32":
            return "tf32"
        return dtype

    def tolerance(self, params: dict[str, Any], dtype: str) -> float:
        return tolerance(self.tolerance_row(params, dtype), self.tol_kind)


class Registry:
    def __init__(self) -> None:
        self._kernels: dict[str, Kernel] = {}

    def register(self, kernel: Kernel) -> Kernel:
        if kernel.name in self._kernels:
            raise ValueError(f"kernel {kernel.name!r} registered twice")
        if not kernel.cases or not kernel.bench:
            raise ValueError(f"kernel {kernel.name!r} needs at least one test case and one bench shape")
        self._kernels[kernel.name] = kernel
        return kernel

    def select(self, pattern: str | None = None) -> list[Kernel]:
        """Kernels whose name or family matches a glob or substring pattern (all when None)."""
        out = []
        for k in self._kernels.values():
            if pattern is None or any(
                fnmatch.fnmatch(s, pattern) or pattern in s for s in (k.name, k.family)
            ):
                out.append(k)
        return out

    def __len__(self) -> int:
        return len(self._kernels)

    def __iter__(self) -> Iterable[Kernel]:
        return iter(self._kernels.values())

    def __getitem__(self, name: str) -> Kernel:
        return self._kernels[name]


REGISTRY = Registry()
register = REGISTRY.register


def dtype_of(name: str) -> torch.dtype:
    return getattr(torch, name)


__all__ = ["AotVariant", "BenchShape", "Case", "Kernel", "REGISTRY", "Registry", "dtype_name", "dtype_of", "register"]
