"""The tap-major implicit GEMM (tensor cores; TMA on sm_90), its time-major input copy, and its launcher."""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from tilewave.kernels.conv.common import _activate, _cdiv, _store_output
from tilewave.kernels.conv.pack import _dummy_int, _packed_interleaved_weight, _packed_tap_weight
from tilewave.kernels.conv.plan import ConvPlan
from tilewave.kernels.conv.transpose import _interleave_phases_kernel, interleave_block


@triton.jit
def _store_phase_interleaved(acc, y_ptr, bias_ptr, res_ptr, b, g, C_out, C_out_g, m0, rows_g, j0, L_out, phases,
                             scale, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, PHASE_PAD: tl.constexpr,
                             DENSE: tl.constexpr, ROW_ALIGN: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr):
    # acc rows (o, φ) = o·PHASE_PAD + φ, columns j: y[b, g·C_out_g + o, j·phases + φ] for φ < phases. The
    # phases are interleaved in registers, so the tile leaves as [BLOCK_M / PHASE_PAD, BLOCK_N·PHASE_PAD]
    # stretches that are contiguous along time (DENSE: phases == PHASE_PAD, no gaps, vector stores; ROW_ALIGN
    # divides L_out, so that they vectorise where L_out is not a multiple of 16, which Triton would assume).
    BLOCK_O: tl.constexpr = BLOCK_M // PHASE_PAD
    if HAS_BIAS:
        r = m0 + tl.arange(0, BLOCK_M)
        acc += tl.load(bias_ptr + g * C_out_g + r // PHASE_PAD, mask=r < rows_g, other=0.0).to(tl.float32)[:, None]
    if not HAS_RES:
        acc = (acc * scale).to(y_ptr.dtype.element_ty)
    v = tl.reshape(tl.permute(tl.reshape(acc, (BLOCK_O, PHASE_PAD, BLOCK_N)), (0, 2, 1)),
                   (BLOCK_O, BLOCK_N * PHASE_PAD))
    o = m0 // PHASE_PAD + tl.arange(0, BLOCK_O)
    c = tl.arange(0, BLOCK_N * PHASE_PAD)
    if DENSE:
        t = j0 * PHASE_PAD + c
        t_mask = t < L_out // ROW_ALIGN * ROW_ALIGN  # == L_out, spelled so the mask stays uniform over a vector
    else:
        ph = c % PHASE_PAD
        t = (j0 + c // PHASE_PAD) * phases + ph
        t_mask = (ph < phases) & (t < L_out)
    offs = tl.multiple_of((b * C_out + g * C_out_g + o).to(tl.int64) * L_out, ROW_ALIGN)[:, None] + t[None, :]
    mask = (o < C_out_g)[:, None] & t_mask[None, :]
    if HAS_RES:
        v = (v + tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)) * scale
    tl.store(y_ptr + offs, v.to(y_ptr.dtype.element_ty), mask=mask)


# Over 80 lines: the reduction loop and its three epilogues are one tile's body; the compiled form (registers,
# spills: tilewave build) is checked as it stands.
@triton.jit
def _conv_tap_tile(tile, x_desc, w_desc, x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
                   C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, C_in_pad, U, n_phases,
                   tap_step, base, out_step, x_shift, x_pitch, tiles_n, slope, scale,
                   TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr,
                   PRECISION: tl.constexpr, UPCAST: tl.constexpr, USE_TMA: tl.constexpr,
                   FAST_SIN: tl.constexpr, PHASE_PAD: tl.constexpr, DENSE: tl.constexpr, ROW_ALIGN: tl.constexpr,
                   PHASE_MAJOR: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # one output tile of _conv_tap_kernel
    tiles_m = tl.cdiv(C_out_g, BLOCK_M)
    per_bg = n_phases * tiles_m * tiles_n
    n_cblk = C_in_pad // BLOCK_K
    R_pad = U * C_in_pad
    kk = tl.arange(0, BLOCK_K)
    bg = tile // per_bg
    rest = tile - bg * per_bg
    phase = rest % n_phases
    pid_m = (rest // n_phases) % tiles_m
    pid_n = rest // (n_phases * tiles_m)
    b = bg // G
    g = bg - b * G
    if TRANSPOSED:
        shift0 = tl.load(phase_base_ptr + phase)
    else:
        shift0 = base
    m0 = pid_m * BLOCK_M
    j0 = pid_n * BLOCK_N
    co = m0 + tl.arange(0, BLOCK_M)
    co_mask = co < C_out_g
    x_row0 = b * C_in + g * C_in_g
    w_row0 = (g * n_phases + phase) * C_out_g
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, U * n_cblk):
        u = i // n_cblk
        c0 = (i - u * n_cblk) * BLOCK_K
        pos0 = j0 + shift0 + u * tap_step
        if USE_TMA:
            a = w_desc.load([w_row0 + m0, u * C_in_pad + c0])
            xb = tl.trans(x_desc.load([b * L_in + pos0 + x_shift, g * C_in_g + c0]))
        else:
            a = tl.load(w_ptr + (w_row0 + co).to(tl.int64)[:, None] * R_pad + (u * C_in_pad + c0 + kk)[None, :],
                        mask=co_mask[:, None], other=0.0)
            if x_pitch > 0:  # x_ptr: a prepared time-major input (TimeMajor), L_in its padded length
                pos = pos0 + x_shift + tl.arange(0, BLOCK_N)
                xmask = ((c0 + kk) < C_in_g)[:, None] & ((pos >= 0) & (pos < L_in))[None, :]
                xb = tl.load(x_ptr + (b * L_in + pos).to(tl.int64)[None, :] * x_pitch
                             + (g * C_in_g + c0 + kk)[:, None], mask=xmask, other=0.0)
            else:
                pos = pos0 + tl.arange(0, BLOCK_N)
                xmask = ((c0 + kk) < C_in_g)[:, None] & ((pos >= 0) & (pos < L_in))[None, :]
                xb = tl.load(x_ptr + (x_row0 + c0 + kk).to(tl.int64)[:, None] * L_in + pos[None, :], mask=xmask,
                             other=0.0)
        if ACT != "none":
            ci = g * C_in_g + c0 + kk
            xb = _activate(xb.to(tl.float32), ci[:, None], ((c0 + kk) < C_in_g)[:, None], a_ptr, b_ptr, slope,
                           ACT, FAST_SIN).to(x_ptr.dtype.element_ty)
        if UPCAST:  # the CPU interpreter cannot multiply bfloat16: widen there, never on the GPU
            a = a.to(tl.float32)
            xb = xb.to(tl.float32)
        acc = tl.dot(a, xb, acc, input_precision=PRECISION)
    if PHASE_PAD > 1:
        _store_phase_interleaved(acc, y_ptr, bias_ptr, res_ptr, b, g, C_out, C_out_g // PHASE_PAD, m0, C_out_g, j0,
                                 L_out, out_step, scale, HAS_BIAS, HAS_RES, PHASE_PAD, DENSE, ROW_ALIGN, BLOCK_M,
                                 BLOCK_N)
    else:
        row = (b * C_out + g * C_out_g + co).to(tl.int64)
        if HAS_RES:
            # in two column halves: a whole tile's residual, accumulator and 64-bit addresses at once spill
            lo, hi = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            t = (j0 + tl.arange(0, BLOCK_N // 2)) * out_step + phase
            _store_output(lo, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out,
                          scale, HAS_BIAS, HAS_RES)
            t += (BLOCK_N // 2) * out_step
            _store_output(hi, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out,
                          scale, HAS_BIAS, HAS_RES)
        elif PHASE_MAJOR:
            # y: the phase-major scratch [B·C_out, n_phases, L_out], L_out = positions per phase: each phase's
            # outputs leave contiguous (stored `out_step` apart they would be partial-sector writes:
            # benchmarks/RESULTS.md); _interleave_phases_kernel then writes the output
            # (in two column halves: the contiguous stores want another register layout than the MMA's, and
            # converting the whole tile at once spills)
            lo, hi = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            prow = row * n_phases + phase
            j = j0 + tl.arange(0, BLOCK_N // 2)
            _store_output(lo, y_ptr, bias_ptr, res_ptr, prow, g * C_out_g + co, co_mask, j, j < L_out, L_out, scale,
                          HAS_BIAS, HAS_RES)
            j += BLOCK_N // 2
            _store_output(hi, y_ptr, bias_ptr, res_ptr, prow, g * C_out_g + co, co_mask, j, j < L_out, L_out, scale,
                          HAS_BIAS, HAS_RES)
        else:
            t = (j0 + tl.arange(0, BLOCK_N)) * out_step + phase
            _store_output(acc, y_ptr, bias_ptr, res_ptr, row, g * C_out_g + co, co_mask, t, t < L_out, L_out,
                          scale, HAS_BIAS, HAS_RES)


# L_out specialised (divisible by 16: the stores vectorise); the other sizes are runtime values.
@triton.jit(do_not_specialize=["C_in", "L_in", "C_out", "G", "C_in_g", "C_out_g", "C_in_pad", "U", "tap_step",
                               "base", "x_shift", "tiles_n", "n_tiles", "x_rows", "x_pitch"])
def _conv_tap_kernel(x_desc, w_desc, x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
                     C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, C_in_pad, U, n_phases,
                     tap_step, base, out_step, x_shift, tiles_n, n_tiles, x_rows, x_pitch, slope, scale,
                     TRANSPOSED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr,
                     PRECISION: tl.constexpr, UPCAST: tl.constexpr, USE_TMA: tl.constexpr,
                     DEVICE_DESC: tl.constexpr, PERSISTENT: tl.constexpr, FAST_SIN: tl.constexpr,
                     PHASE_PAD: tl.constexpr, DENSE: tl.constexpr, ROW_ALIGN: tl.constexpr,
                     PHASE_MAJOR: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    # Tap-major implicit GEMM for a stride-1 conv or one output phase of a transposed conv. Reduction step
    # i covers tap u = i // n_cblk and input channels c0 .. c0 + BLOCK_K of the group, so both operand
    # tiles are rectangles: A = Wp[row, u·C_in_pad + c0 : +BLOCK_K] (weight repacked tap-major, channels
    # zero-padded to C_in_pad), B = x[b, g·C_in_g + c0 : +BLOCK_K, j0 + base + u·tap_step : +BLOCK_N].
    # USE_TMA: both through tensor descriptors, and the pipeliner overlaps the copies of the next stages
    # with the asynchronous wgmma. x_desc is a zero-padded time-major copy [B·L_in, C_in] of x (L_in the
    # padded length, x_shift its left padding): its [BLOCK_N, BLOCK_K] boxes start at any time (TMA wants
    # the innermost coordinate 16-byte aligned, which a channel offset is and a tap shift is not: on
    # sm_90 a misaligned one faults), the zero rows are the conv's padding and keep boxes inside their
    # batch, and the boxes are K-major as tf32 wgmma needs. Columns of B past the group's channels belong
    # to the next group; their weights are the zero padding of Wp.
    # DEVICE_DESC: x_desc and w_desc arrive as the plain pointers (time-major copy [x_rows, x_pitch],
    # packed weight) and the descriptors are made here, which keeps the host launch cheap (a host
    # descriptor is encoded on the CPU at every launch); it needs triton.set_allocator for their scratch.
    # Otherwise plain masked loads of the same rectangles from x (the CPU interpreter), or where x_pitch > 0
    # from a caller's time-major input (TimeMajor) as the descriptors read it.
    # Tiles (n_tiles = phases · M tiles · N tiles · B·G, phases fastest, then M tiles, as in
    # _conv_gemm_kernel): one per program, or PERSISTENT, one program per SM walking them with a grid
    # stride in one flattened, pipelined loop, so that the next tile's loads overlap this tile's epilogue.
    # PHASE_PAD > 1: a phase-interleaved transposed conv (module doc): a stride-1 conv here (C_out_g counts
    # the rows (o, φ), out_step = s), whose epilogue interleaves the phases (_store_phase_interleaved).
    if DEVICE_DESC:
        x_desc = tl.make_tensor_descriptor(x_desc, shape=[x_rows, C_in], strides=[x_pitch, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[G * n_phases * C_out_g, U * C_in_pad],
                                           strides=[U * C_in_pad, 1], block_shape=[BLOCK_M, BLOCK_K])
    args = (x_desc, w_desc, x_ptr, w_ptr, bias_ptr, res_ptr, y_ptr, phase_base_ptr, a_ptr, b_ptr,
            C_in, L_in, C_out, L_out, G, C_in_g, C_out_g, C_in_pad, U, n_phases, tap_step, base, out_step, x_shift,
            x_pitch, tiles_n, slope, scale)
    if PERSISTENT:
        for tile in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), flatten=True):
            _conv_tap_tile(tile, *args, TRANSPOSED, ACT, HAS_BIAS, HAS_RES, PRECISION, UPCAST, USE_TMA, FAST_SIN,
                           PHASE_PAD, DENSE, ROW_ALIGN, PHASE_MAJOR, BLOCK_M, BLOCK_N, BLOCK_K)
    else:
        _conv_tap_tile(tl.program_id(0), *args, TRANSPOSED, ACT, HAS_BIAS, HAS_RES, PRECISION, UPCAST, USE_TMA,
                       FAST_SIN, PHASE_PAD, DENSE, ROW_ALIGN, PHASE_MAJOR, BLOCK_M, BLOCK_N, BLOCK_K)


@triton.jit(do_not_specialize=["C", "L", "Lp", "left"])
def _time_major_pad_kernel(x_ptr, xt_ptr, C, L, Lp, pitch, left, BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr):
    # xt[b, t, c] = x[b, c, t − left] inside x, 0 elsewhere (t < Lp, c < pitch): the tap kernel's time-major
    # input, in one pass. grid (cdiv(Lp, BLOCK_T), cdiv(pitch, BLOCK_C), B).
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    b = tl.program_id(2).to(tl.int64)
    pos = t - left
    inside = (c < C)[:, None] & ((pos >= 0) & (pos < L))[None, :]
    v = tl.load(x_ptr + b * C * L + c.to(tl.int64)[:, None] * L + pos[None, :], mask=inside, other=0.0)
    tl.store(xt_ptr + b * Lp * pitch + t.to(tl.int64)[:, None] * pitch + c[None, :], tl.trans(v),
             mask=(t < Lp)[:, None] & (c < pitch)[None, :])


def _row_align(L_out: int, itemsize: int) -> int:
    """The largest power of two dividing L_out, up to one 16-byte vector of elements."""
    return math.gcd(L_out, 16 // itemsize)


TIME_MAJOR_PAD_BLOCK = (64, 64)  # (channels, time) per program of _time_major_pad_kernel


class TimeMajor(NamedTuple):
    """A conv input x [B, C, L] already in the tap kernel's time-major form, as _x_time_major would copy it: data
    [B, Lp, pitch] with data[b, left + t, c] = x[b, c, t] and zeros elsewhere (the layout of time_major_layout).
    A producer that writes this form (kernels.norm.adain1d_time_major) saves the conv its copy pass."""
    data: torch.Tensor
    left: int
    channels: int
    length: int

    def like(self) -> torch.Tensor:
        """A [B, C, L] tensor of x's dtype and device, for the checks and the plan (one element, expanded)."""
        return self.data.new_empty(1).expand(self.data.shape[0], self.channels, self.length)


def time_major_layout(x: torch.Tensor, pos_lo: int, pos_hi: int) -> tuple[int, int, int]:
    """(left, Lp, pitch) of the time-major copy of x [B, C, L] for a kernel that reads positions pos_lo ..
    pos_hi: zero rows where it reads outside [0, L) (the conv's padding, and boxes kept from reaching into the next
    batch), channels padded to a 16-byte row pitch."""
    _, C, L = x.shape
    left, right = max(0, -pos_lo), max(0, pos_hi - L)
    per_16b = 16 // x.element_size()
    return left, left + L + right, _cdiv(C, per_16b) * per_16b


def _x_time_major(x: torch.Tensor, pos_lo: int, pos_hi: int) -> tuple[torch.Tensor, int]:
    """x [B, C, L] → (time-major copy [B, Lp, pitch] (time_major_layout), its left padding)."""
    B, C, L = x.shape
    left, Lp, pitch = time_major_layout(x, pos_lo, pos_hi)
    xt = x.new_empty(B, Lp, pitch)
    grid = (_cdiv(Lp, TIME_MAJOR_PAD_BLOCK[1]), _cdiv(pitch, TIME_MAJOR_PAD_BLOCK[0]), B)
    _time_major_pad_kernel[grid](x, xt, C, L, Lp, pitch, left, BLOCK_C=TIME_MAJOR_PAD_BLOCK[0],
                                 BLOCK_T=TIME_MAJOR_PAD_BLOCK[1], num_warps=4)
    return xt, left


def check_time_major(p: ConvPlan, xt: TimeMajor) -> None:
    """A TimeMajor input must be in the layout plan p's tap kernel reads."""
    want = time_major_layout(xt.like(), p.pos_lo, p.pos_hi)
    have = (xt.left, xt.data.shape[1], xt.data.shape[2])
    if p.design != "tap" or p.separate_snake or p.interleave or p.transposed:
        raise ValueError(f"conv1d: a time-major input needs the tap kernel's stride-1 form; this call is planned as "
                         f"{p.design!r} (use time_major_layout, which says when)")
    if have != want or not xt.data.is_contiguous():
        raise ValueError(f"conv1d: the time-major input is (left, Lp, pitch) = {have}, contiguous="
                         f"{xt.data.is_contiguous()}; this call's tap kernel reads {want}")


def _tma_scratch(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _use_tma_scratch() -> None:
    """Kernels that make TMA descriptors need global scratch for them: from PyTorch's allocator. Set at every
    launch: Triton keeps the allocator in a context variable, so one set in the main thread is not there in the
    engine's scheduler thread (there the worker's first conv would fail with "no allocator was set")."""
    triton.set_allocator(_tma_scratch)


def launch_tap(p: ConvPlan, x, weight, bias, res, alpha, beta, slope: float, scale: float, out: torch.Tensor,
               prepared: TimeMajor | None = None):
    """The tap-major kernel for plan `p` (bias, res, alpha, beta: tensors or placeholders; flags say which);
    prepared: x already time-major (check_time_major), read as it is instead of copied."""
    cfg = p.cfg
    per_phase = p.transposed and not p.interleave
    if p.interleave:
        w_tap, _, U, C_in_pad = _packed_interleaved_weight(weight, p.groups, p.stride, p.padding, p.dilation,
                                                           cfg.BLOCK_K, p.phase_pad)
    else:
        w_tap, phase_base, U, C_in_pad = _packed_tap_weight(weight, p.transposed, p.groups, p.stride, p.padding,
                                                            p.dilation, cfg.BLOCK_K)
    if not per_phase:
        phase_base = _dummy_int(x.device)
    x_shift, L_desc, x_rows, x_pitch = 0, p.L_in, 0, 0
    if prepared is not None:
        x = prepared.data
    x_desc, w_desc = x, w_tap
    if p.tma or prepared is not None:
        xt, x_shift = (x, prepared.left) if prepared is not None else _x_time_major(x, p.pos_lo, p.pos_hi)
        L_desc, x_pitch = xt.shape[1], xt.shape[2]
        x_rows = p.B * L_desc
        if p.tma and p.device_descriptors:
            x_desc = xt
            _use_tma_scratch()
        elif p.tma:  # (the pointer form reads a prepared input itself, told by x_pitch > 0)
            from triton.tools.tensor_descriptor import TensorDescriptor
            x_desc = TensorDescriptor(xt.reshape(x_rows, x_pitch), [x_rows, p.C_in], [x_pitch, 1],
                                      [cfg.BLOCK_N, cfg.BLOCK_K])
            w_desc = TensorDescriptor.from_tensor(w_tap, [cfg.BLOCK_M, cfg.BLOCK_K])
    y_arg, y_len = out, p.L_out
    if p.phase_major:
        y_len = p.positions
        y_arg = torch.empty(p.B * p.C_out * p.phases * p.positions, dtype=out.dtype, device=out.device)
    _conv_tap_kernel[p.grid](
        x_desc, w_desc, x, w_tap, bias, res, y_arg, phase_base, alpha, beta,
        p.C_in, L_desc, p.C_out, y_len, p.groups, p.C_in_g, p.rows_g, C_in_pad, U, p.phases,
        p.tap_step, p.base, p.out_step, x_shift, p.tiles_n, p.n_tiles, x_rows, x_pitch, float(slope), float(scale),
        TRANSPOSED=per_phase, UPCAST=p.upcast, PERSISTENT=p.persistent, DEVICE_DESC=p.device_descriptors,
        PHASE_PAD=p.phase_pad, DENSE=p.phase_pad == p.stride, ROW_ALIGN=_row_align(y_len, x.element_size()),
        PHASE_MAJOR=p.phase_major, PRECISION=p.dot, USE_TMA=p.tma,
        BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N, BLOCK_K=cfg.BLOCK_K,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages, **p.flags(x))
    if p.phase_major:
        block_j = interleave_block(p.phases)
        _interleave_phases_kernel[(p.B * p.C_out, _cdiv(p.positions, block_j))](
            y_arg, out, p.positions, p.L_out, S=p.phases, S_P=triton.next_power_of_2(p.phases), BLOCK_J=block_j,
            num_warps=4)
