"""The gather implicit GEMM (exact float32 on the FMA units, strided convs, GPUs without TMA) and its launcher."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from tilewave.kernels.conv.common import _activate, _store_output
from tilewave.kernels.conv.pack import _dummy_int, _packed_transpose_weight
from tilewave.kernels.conv.plan import ConvPlan


@triton.jit
def _load_x_tile(x_rows, r0, R, U, pos0, tap_step, L_in, BLOCK_K: tl.constexpr):
    # B[r, j] = x[c(r), pos0[j] + u(r)·tap_step], zero outside [0, L_in) (the conv's zero padding).
    # Rows past R get a shift that puts them out of range, so one unsigned compare per element masks
    # the padding on both sides and the reduction tail (this index arithmetic runs on every element).
    r = r0 + tl.arange(0, BLOCK_K)
    c = r // U
    shift = tl.where(r < R, (r - c * U) * tap_step, -(1 << 30))
    pos = pos0[None, :] + shift[:, None]
    mask = pos.to(tl.uint32, bitcast=True) < L_in.to(tl.uint32)
    return tl.load(x_rows + c.to(tl.int64)[:, None] * L_in + pos, mask=mask, other=0.0)


@triton.jit
def _gemm_tile(n_phases, C_out_g, G, BLOCK_M: tl.constexpr):
    # grid (phases · M tiles · N tiles, B·G), phases fastest, then M tiles: see _conv_gemm_kernel.
    pid = tl.program_id(0)
    bg = tl.program_id(1)
    tiles_m = tl.cdiv(C_out_g, BLOCK_M)
    return pid % n_phases, (pid // n_phases) % tiles_m, pid // (n_phases * tiles_m), bg // G, bg % G


# Specialised: L_out and the reduction size (divisible by 16: the output and the weight rows
# vectorise) and in_step/out_step (== 1: x loads and y stores are contiguous along time). The other
# sizes would only multiply the compiled variants.
@triton.jit(do_not_specialize=["C_in", "L_in", "C_out", "G", "C_in_g", "C_out_g", "U", "tap_step", "base"])
def _conv_gemm_kernel(x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
                      C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, R, U, n_phases,
                      in_step, tap_step, base, out_step, slope, scale,
                      TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr,
                      HAS_RES: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                      PREFETCH: tl.constexpr, FAST_SIN: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (phases · cdiv(C_out_g, BLOCK_M) · cdiv(positions, BLOCK_N), B·G). Phases vary fastest, then
    # output-channel tiles: programs that run together share their x tile (read from L2, not DRAM) and,
    # for a transposed conv, interleave their strided stores into the same output sectors.
    # Reduction index r = c·U + u (c input channel in the group, u tap); input position of output j:
    # j·in_step + base + u·tap_step (conv: s, −p, d; transposed phase φ: 1, base_φ, −d/gcd(s, d)).
    # The weight tile is contiguous and aligned, so Triton's pipeliner streams it with cp.async over
    # num_stages buffers. The x tile starts at an arbitrary element offset (the tap shift): 2-byte
    # elements cannot go through cp.async, so for 16-bit storage (PREFETCH) the next x tile is loaded
    # into registers while the tensor cores work on the current one.
    phase, pid_m, pid_n, b, g = _gemm_tile(n_phases, C_out_g, G, BLOCK_M)
    if TRANSPOSED:
        base = tl.load(phase_base_ptr + phase)
    co = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    j = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    co_mask = co < C_out_g
    pos0 = j * in_step + base
    x_rows = x_ptr + (b * C_in + g * C_in_g).to(tl.int64) * L_in
    w_rows = w_ptr + ((g * n_phases + phase) * C_out_g + co).to(tl.int64)[:, None] * R
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if PREFETCH:
        xb_next = _load_x_tile(x_rows, 0, R, U, pos0, tap_step, L_in, BLOCK_K)
    for r0 in range(0, R, BLOCK_K):
        r = r0 + tl.arange(0, BLOCK_K)
        a = tl.load(w_rows + r[None, :], mask=co_mask[:, None] & (r < R)[None, :], other=0.0)
        if PREFETCH:
            xb = xb_next
        else:
            xb = _load_x_tile(x_rows, r0, R, U, pos0, tap_step, L_in, BLOCK_K)
        if ACT != "none":
            xb = _activate(xb.to(tl.float32), (g * C_in_g + r // U)[:, None], (r < R)[:, None],
                           a_ptr, b_ptr, slope, ACT, FAST_SIN).to(x_ptr.dtype.element_ty)
        if UPCAST:  # the CPU interpreter cannot multiply bfloat16: widen there, never on the GPU
            a = a.to(tl.float32)
            xb = xb.to(tl.float32)
        acc = tl.dot(a, xb, acc, input_precision=PRECISION)
        if PREFETCH:  # after the dot in program order, so the address arithmetic overlaps the async MMA
            xb_next = _load_x_tile(x_rows, r0 + BLOCK_K, R, U, pos0, tap_step, L_in, BLOCK_K)
    t = j * out_step + phase
    row = (b * C_out + g * C_out_g + co).to(tl.int64)
    _store_output(acc, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out, scale,
                  HAS_BIAS, HAS_RES)


def launch_gemm(p: ConvPlan, x, weight, bias, res, alpha, beta, slope: float, scale: float, out: torch.Tensor):
    """The gather implicit GEMM for plan `p` (a transposed conv per phase, its weight packed phase-major)."""
    if p.transposed:
        w_arg, phase_base, U = _packed_transpose_weight(weight, p.groups, p.stride, p.padding, p.dilation)
    else:
        w_arg, phase_base, U = weight, _dummy_int(x.device), p.K
    cfg = p.cfg
    _conv_gemm_kernel[p.grid](
        x, w_arg, bias, res, out, phase_base, alpha, beta,
        p.C_in, p.L_in, p.C_out, p.L_out, p.groups, p.C_in_g, p.C_out_g, p.C_in_g * U, U, p.phases,
        p.in_step, p.tap_step, p.base, p.out_step, float(slope), float(scale),
        TRANSPOSED=p.transposed, UPCAST=p.upcast, PRECISION=p.dot, PREFETCH=x.dtype != torch.float32,
        BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N, BLOCK_K=cfg.BLOCK_K,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages, **p.flags(x))
