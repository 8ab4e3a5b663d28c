"""Linear layers as the models call them: the product with its epilogue (bias, activation, residual) in one
Triton kernel where its products run on the tensor cores, PyTorch's ops one after another elsewhere."""
from __future__ import annotations

import torch

from tilewave import precision
from tilewave.ops import activation
from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.linear import linear_torch


def _covered(x: torch.Tensor, weight: torch.Tensor, bias, residual) -> tuple[bool, str]:
    if x.dtype == torch.float32 and precision.current() == "ieee":
        # exact float32 on the FMA units: cuBLAS's sgemm is faster than a Triton FMA dot
        return False, "exact float32 products: cuBLAS"
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or any(
            t is not None and t.dtype != x.dtype for t in (weight, bias, residual)):
        return False, f"dtypes {x.dtype} / {weight.dtype}"
    if x.stride(-1) != 1 or (residual is not None and residual.stride(-1) != 1):
        return False, "a strided last axis"
    return True, ""


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, act: str = "none",
           residual: torch.Tensor | None = None) -> torch.Tensor:
    """act(F.linear(x, weight, bias)) + residual; act 'none' or 'gelu_tanh'. Products in the precision mode in
    force (tilewave.precision): float32-class 'tf32x3' and 'tf32' on the kernel, exact 'ieee' on cuBLAS."""
    if act not in ("none", "gelu_tanh"):
        raise ValueError(f"linear: act must be 'none' or 'gelu_tanh', got {act!r}")
    if use_triton("linear", x, weight, bias, residual, supported=lambda: _covered(x, weight, bias, residual)):
        return kernels("linear").linear(x, weight, bias, act, residual, precision=precision.current())
    return linear_torch(x, weight, bias, act, residual, gelu=activation.gelu_tanh)
