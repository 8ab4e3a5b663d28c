"""Convolution ops (NCL layout; weight OIK for conv, IOK for transposed conv), same arguments as torch.nn.functional.

On CUDA tensors they run the Triton kernels of tilewave.kernels.conv; float32 meets the tensor cores at the
precision in force (tilewave.precision.current(): 'ieee', exact, outside a scope, for parity).
`conv1d_fused` adds what the vocoder resblocks do around a conv (an activation on its input, a residual
add and a scale on its output) in the same pass.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tilewave import precision
from tilewave.ops.dispatch import current_backend, kernels, use_triton
from tilewave.reference.conv import ACTS, conv1d_fused_torch

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _int1(v) -> int | None:
    """An int, or PyTorch's 1-tuple form of one; None for anything else."""
    if isinstance(v, (tuple, list)):
        v = v[0] if len(v) == 1 else None
    return v if isinstance(v, int) else None


def _padding(padding, weight: torch.Tensor, stride, dilation, transposed: bool) -> int | None:
    """PyTorch's padding argument as a symmetric int, or None when the kernels cannot express it."""
    if padding == "valid":
        return 0
    if padding == "same" and not transposed and _int1(stride) == 1 and _int1(dilation) is not None:
        total = _int1(dilation) * (weight.shape[-1] - 1)
        return total // 2 if total % 2 == 0 else None  # odd totals pad one more on the right: not symmetric
    return _int1(padding)


def _kernel_args(x, weight, bias, residual, stride, padding, dilation, transposed, output_padding=0):
    """(stride, padding, dilation, output_padding) as ints when the kernel covers this call, else None."""
    ints = (_int1(stride), _padding(padding, weight, stride, dilation, transposed), _int1(dilation),
            _int1(output_padding))
    same_dtype = all(t is None or t.dtype == x.dtype for t in (weight, bias, residual))
    if None in ints or x.dtype not in _KERNEL_DTYPES or not same_dtype or x.dim() not in (2, 3):
        return None
    return ints


def conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride: int = 1,
           padding: int | str = 0, dilation: int = 1, groups: int = 1) -> torch.Tensor:
    """F.conv1d; x may also be the time-major input that time_major_layout asked a producer for."""
    if not isinstance(x, torch.Tensor):  # kernels.conv.TimeMajor: only time_major_layout's callers make one
        use_triton("conv1d", x.data, weight, bias)
        return kernels("conv").conv1d(x, weight, bias, stride, padding, dilation, groups,
                                      precision=precision.current())
    args = _kernel_args(x, weight, bias, None, stride, padding, dilation, False)
    if use_triton("conv1d", x, weight, bias, supported=args is not None,
                  reason=f"dtype {x.dtype} / padding {padding!r} not covered by the conv kernel"):
        s, p, d, _ = args
        return kernels("conv").conv1d(x, weight, bias, s, p, d, groups, precision=precision.current())
    return F.conv1d(x, weight, bias, stride, padding, dilation, groups)


def time_major_layout(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride: int = 1,
                      padding: int = 0, dilation: int = 1, groups: int = 1) -> tuple[int, int, int] | None:
    """(left, Lp, pitch) when conv1d(x, weight, ...) would copy x into the tap kernel's time-major form first (the
    Triton kernels on a GPU with tensor descriptors): a producer that writes x in that form instead (kernels.conv
    .TimeMajor; ops.norm.adain1d's time_major) saves the copy. None where conv1d reads x as it is."""
    args = _kernel_args(x, weight, bias, None, stride, padding, dilation, False)
    if args is None or current_backend() == "torch" or not all(t.is_cuda for t in (x, weight) if t is not None):
        return None
    s, p, d, _ = args
    return kernels("conv").time_major_layout(x, weight, bias, s, p, d, groups, precision=precision.current())


def conv1d_transpose(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride: int = 1,
                     padding: int = 0, output_padding: int = 0, groups: int = 1,
                     dilation: int = 1) -> torch.Tensor:
    args = _kernel_args(x, weight, bias, None, stride, padding, dilation, True, output_padding)
    if use_triton("conv1d_transpose", x, weight, bias, supported=args is not None,
                  reason=f"dtype {x.dtype} not covered by the transposed conv kernel"):
        s, p, d, op = args
        return kernels("conv").conv1d_transpose(x, weight, bias, s, p, op, groups, d, precision=precision.current())
    return F.conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation)


def conv1d_fused(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, *, act: str = "none", slope: float = 0.0,
                 alpha: torch.Tensor | None = None, beta: torch.Tensor | None = None,
                 residual: torch.Tensor | None = None, scale: float = 1.0, transposed: bool = False,
                 output_padding: int = 0) -> torch.Tensor:
    """scale · (conv(act(x)) + bias + residual).

    act: 'none', 'leaky_relu' (x > 0 ? x : slope·x) or 'snake' (x + sin(α_c·x)² / (β_c + 1e-9), α and β
    per input channel, β = α when None). transposed: a transposed conv (weight IOK, output_padding used).
    """
    if act not in ACTS:
        raise ValueError(f"conv1d_fused: act must be one of {ACTS}, got {act!r}")
    if act == "snake" and alpha is None:
        raise ValueError("conv1d_fused: act='snake' needs alpha (one value per input channel)")
    alpha = None if alpha is None else alpha.to(x.dtype)
    beta = None if beta is None else beta.to(x.dtype)
    args = _kernel_args(x, weight, bias, residual, stride, padding, dilation, transposed, output_padding)
    if use_triton("conv1d_fused", x, weight, bias, residual, alpha, beta, supported=args is not None,
                  reason=f"dtype {x.dtype} / padding {padding!r} not covered by the conv kernel"):
        s, p, d, op = args
        return kernels("conv").conv1d_fused(x, weight, bias, s, p, d, groups, act=act, slope=slope, alpha=alpha,
                                            beta=beta, residual=residual, scale=scale, transposed=transposed,
                                            output_padding=op, precision=precision.current())
    return conv1d_fused_torch(x, weight, bias, stride, padding, dilation, groups, act=act, slope=slope,
                              alpha=alpha, beta=beta, residual=residual, scale=scale, transposed=transposed,
                              output_padding=output_padding)
