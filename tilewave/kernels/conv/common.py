"""What the conv kernels share: the input activation and the epilogue store, run inside the loads/stores."""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from tilewave.kernels._common import sin
from tilewave.reference.conv import ACTS  # noqa: F401

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _activate(x, ci, cmask, a_ptr, b_ptr, slope, ACT: tl.constexpr, FAST_SIN: tl.constexpr):
    # x float32; ci the input channel of each row (broadcastable to x), cmask where ci is valid.
    if ACT == "leaky_relu":
        x = tl.where(x > 0, x, x * slope)
    elif ACT == "snake":
        a = tl.load(a_ptr + ci, mask=cmask, other=1.0).to(tl.float32)
        b = tl.load(b_ptr + ci, mask=cmask, other=1.0).to(tl.float32)
        s = sin(a * x, FAST_SIN)
        x = x + s * s / (b + 1e-9)
    return x


@triton.jit
def _store_output(acc, y_ptr, bias_ptr, res_ptr, row, co, co_mask, t, t_mask, L_out, scale,
                  HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr):
    # row: int64 output row (b·C_out + o) per output channel; the residual has y's layout.
    if HAS_BIAS:
        acc += tl.load(bias_ptr + co, mask=co_mask, other=0.0).to(tl.float32)[:, None]
    offs = row[:, None] * L_out + t[None, :]
    mask = co_mask[:, None] & t_mask[None, :]
    if HAS_RES:
        acc += tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (acc * scale).to(y_ptr.dtype.element_ty), mask=mask)


def _cdiv(a: int, b: int) -> int:
    # triton.cdiv goes through Triton's constexpr machinery: microseconds per call on the launch path
    return -(-a // b)


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"
