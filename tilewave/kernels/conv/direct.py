"""The direct conv (no dot: depthwise and tiny channel counts) and its launcher."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from tilewave.kernels.conv.common import _activate, _cdiv, _store_output
from tilewave.kernels.conv.plan import ConvPlan


@triton.jit(do_not_specialize=["C_in", "C_out", "C_in_g", "C_out_g", "K", "stride", "padding", "dilation"])
def _conv_direct_kernel(x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, a_ptr, b_ptr,
                        C_in, L_in, C_out, L_out, C_in_g, C_out_g, K, stride, padding, dilation, slope, scale,
                        TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr,
                        HAS_RES: tl.constexpr, FAST_SIN: tl.constexpr, BLOCK_C: tl.constexpr,
                        BLOCK_T: tl.constexpr):
    # grid: (cdiv(L_out, BLOCK_T), cdiv(C_out, BLOCK_C), B); one weight per (output channel, c, k),
    # so this suits depthwise and tiny channel counts, where a tensor-core tile would be mostly padding.
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    co = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    b = tl.program_id(2)
    co_mask = co < C_out
    t_mask = t < L_out
    g = co // C_out_g
    x_rows = x_ptr + b.to(tl.int64) * C_in * L_in
    acc = tl.zeros((BLOCK_C, BLOCK_T), dtype=tl.float32)
    for r in range(0, C_in_g * K):
        c = r // K
        k = r - c * K
        ci = g * C_in_g + c
        if TRANSPOSED:  # W [C_in, C_out/G, K]; input i reaches t when t + p − k·d = i·s
            w = tl.load(w_ptr + (ci.to(tl.int64) * C_out_g + co - g * C_out_g) * K + k, mask=co_mask, other=0.0)
            q = t + padding - k * dilation
            qc = tl.maximum(q, 0)
            pos = qc // stride
            valid = (q >= 0) & (qc - pos * stride == 0) & (pos < L_in)
        else:  # W [C_out, C_in/G, K]
            w = tl.load(w_ptr + co.to(tl.int64) * (C_in_g * K) + r, mask=co_mask, other=0.0)
            pos = t * stride + k * dilation - padding
            valid = (pos >= 0) & (pos < L_in)
        m = co_mask[:, None] & valid[None, :]
        xv = tl.load(x_rows + ci.to(tl.int64)[:, None] * L_in + pos[None, :], mask=m, other=0.0).to(tl.float32)
        if ACT != "none":
            xv = _activate(xv, ci[:, None], co_mask[:, None], a_ptr, b_ptr, slope, ACT, FAST_SIN)
        acc += w.to(tl.float32)[:, None] * xv
    row = (b * C_out + co).to(tl.int64)
    _store_output(acc, y_ptr, bias_ptr, res_ptr, row, co, co_mask, t, t_mask, L_out, scale, HAS_BIAS, HAS_RES)


def launch_direct(p: ConvPlan, x, weight, bias, res, alpha, beta, slope: float, scale: float, out: torch.Tensor):
    """The direct kernel for plan `p`: one weight per (output channel, input channel, tap), no dot."""
    BLOCK_C, BLOCK_T = p.direct_block
    grid = (_cdiv(p.L_out, BLOCK_T), _cdiv(p.C_out, BLOCK_C), p.B)
    _conv_direct_kernel[grid](
        x, weight, bias, res, out, alpha, beta,
        p.C_in, p.L_in, p.C_out, p.L_out, p.C_in_g, p.C_out_g, p.K, p.stride, p.padding, p.dilation, float(slope),
        float(scale), TRANSPOSED=p.transposed, BLOCK_C=BLOCK_C, BLOCK_T=BLOCK_T, num_warps=4, **p.flags(x))
