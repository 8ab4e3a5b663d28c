"""Transposed-conv geometry: output phases, their taps and shifts, and the phase-interleaving pass."""
from __future__ import annotations

import math

import triton
import triton.language as tl

from tilewave.kernels.conv.common import _cdiv


@triton.jit(do_not_specialize=["P", "L_out"])
def _interleave_phases_kernel(src_ptr, y_ptr, P, L_out, S: tl.constexpr, S_P: tl.constexpr, BLOCK_J: tl.constexpr):
    # y[r, j·S + φ] = src[r, φ, j] for φ < S, j·S + φ < L_out: the phase-major result of a per-phase transposed
    # conv (src [rows, S, P]) interleaved along time. grid (rows, cdiv(P, BLOCK_J)): a program reads S runs of
    # BLOCK_J and writes BLOCK_J·S consecutive samples.
    r = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    ph = tl.arange(0, S_P)
    v = tl.load(src_ptr + r * S * P + ph[:, None] * P + j[None, :], mask=(ph < S)[:, None] & (j < P)[None, :])
    t = j[:, None] * S + ph[None, :]
    tl.store(y_ptr + r * L_out + t, tl.trans(v), mask=(ph < S)[None, :] & (t < L_out))


def interleaved_extra_macs(C_in_g: int, K: int, stride: int, padding: int, dilation: int) -> float:
    """Multiply-adds per output that the phase-interleaved form adds on zero weights: C_in/G · (U'·P/s − U)
    (U' shifts of the union, P = next_power_of_2(s) rows per channel, U taps per phase)."""
    U = _cdiv(K, stride // math.gcd(stride, dilation))
    U_all = interleaved_shifts(K, stride, padding, dilation)[1]
    return C_in_g * (U_all * triton.next_power_of_2(stride) / stride - U)


def interleave_block(phases: int) -> int:
    """Time positions per program of _interleave_phases_kernel: ~2048 samples a program."""
    return max(16, 2048 // triton.next_power_of_2(phases))


def conv1d_out_len(L: int, K: int, stride: int, padding: int, dilation: int) -> int:
    return (L + 2 * padding - dilation * (K - 1) - 1) // stride + 1


def conv1d_transpose_out_len(L: int, K: int, stride: int, padding: int, output_padding: int,
                             dilation: int) -> int:
    return (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1


def transpose_phase_plan(K: int, stride: int, padding: int, dilation: int) -> list[tuple[int, int] | None]:
    """Per output phase φ = t mod stride: (k0, base) where the phase's taps are k0, k0 + s/g, … (< K) and
    output t = φ + s·j reads input j + base − u·d/g for its u-th tap (g = gcd(s, d)); None if no tap
    reaches that phase."""
    step = stride // math.gcd(stride, dilation)
    plan = []
    for phase in range(stride):
        target = (phase + padding) % stride
        k0 = next((k for k in range(min(step, K)) if (k * dilation) % stride == target), None)
        plan.append(None if k0 is None else (k0, (phase + padding - k0 * dilation) // stride))
    return plan


def _phase_taps(K: int, stride: int, padding: int, dilation: int):
    """(phase, taps of that phase, base) for each phase some tap reaches (transpose_phase_plan)."""
    step = stride // math.gcd(stride, dilation)
    return [(phase, list(range(entry[0], K, step)), entry[1])
            for phase, entry in enumerate(transpose_phase_plan(K, stride, padding, dilation)) if entry is not None]


def interleaved_shifts(K: int, stride: int, padding: int, dilation: int) -> tuple[int, int]:
    """(lowest shift, U'): the input offsets i − j over all phases' taps (transpose_phase_plan: phase φ's u-th
    tap reads input j + base_φ − u·d/g) span lowest … lowest + U' − 1, the taps of the phase-interleaved form."""
    d_g = dilation // math.gcd(stride, dilation)
    shifts = [base - u * d_g for _, taps, base in _phase_taps(K, stride, padding, dilation) for u in range(len(taps))]
    return min(shifts), max(shifts) - min(shifts) + 1
