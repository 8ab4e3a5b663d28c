"""Weights repacked for the tensor-core designs, once per (weight tensor, version, form): phase-major, tap-major,
phase-interleaved."""
from __future__ import annotations

import math
import weakref

import torch

from tilewave.kernels.conv.common import _cdiv
from tilewave.kernels.conv.transpose import _phase_taps, interleaved_shifts


_PACKED: dict[tuple[int, str], tuple[weakref.ref, tuple, tuple]] = {}


def _cached_pack(weight: torch.Tensor, form: str, args: tuple, build):
    """build(weight) cached per (weight tensor, packed form): one entry each, replaced when the weight is
    updated in place or used with other arguments, so that a model's static weights are repacked once."""
    key = (id(weight), form)
    signature = (weight._version, weight.data_ptr(), *args)
    hit = _PACKED.get(key)
    if hit is not None and hit[0]() is weight and hit[1] == signature:
        return hit[2]
    result = build(weight)
    if hit is None or hit[0]() is not weight:
        weakref.finalize(weight, _PACKED.pop, key, None)
    _PACKED[key] = (weakref.ref(weight), signature, result)
    return result


def _packed_transpose_weight(weight: torch.Tensor, groups: int, stride: int, padding: int, dilation: int):
    """[C_in, C_out/G, K] → ([G, s, C_out/G, (C_in/G)·U] phase-major weight, int32 base per phase, U)."""
    def build(weight):
        C_in, C_out_g, K = weight.shape
        C_in_g = C_in // groups
        U = _cdiv(K, stride // math.gcd(stride, dilation))
        w = weight.reshape(groups, C_in_g, C_out_g, K)
        packed = weight.new_zeros(groups, stride, C_out_g, C_in_g, U)
        bases = [0] * stride
        for phase, taps, base in _phase_taps(K, stride, padding, dilation):
            packed[:, phase, :, :, :len(taps)] = w[..., taps].permute(0, 2, 1, 3)
            bases[phase] = base
        return (packed.reshape(groups, stride, C_out_g, C_in_g * U),
                torch.tensor(bases, dtype=torch.int32, device=weight.device), U)
    return _cached_pack(weight, "phase-major", (groups, stride, padding, dilation), build)


def _packed_tap_weight(weight: torch.Tensor, transposed: bool, groups: int, stride: int, padding: int,
                       dilation: int, block_k: int):
    """Tap-major weight for _conv_tap_kernel: [G·phases·C_out/G, U·C_in_pad] with row (g, phase, o) and
    column u·C_in_pad + c, channels zero-padded to C_in_pad = ⌈C_in/G / block_k⌉·block_k; int32 base
    per phase (transposed), U taps per phase. A stride-1 conv is one phase whose U = K taps are its own."""
    def build(weight):
        if transposed:
            C_in, C_out_g, K = weight.shape
            C_in_g = C_in // groups
            U = _cdiv(K, stride // math.gcd(stride, dilation))
            w = weight.reshape(groups, C_in_g, C_out_g, K).permute(0, 2, 3, 1)  # [G, C_out/G, K, C_in/G]
            phases = _phase_taps(K, stride, padding, dilation)
            n_phases = stride
        else:
            C_out, C_in_g, K = weight.shape
            C_out_g, U = C_out // groups, K
            w = weight.reshape(groups, C_out_g, C_in_g, K).permute(0, 1, 3, 2)
            phases, n_phases = [(0, list(range(K)), 0)], 1
        C_in_pad = _cdiv(C_in_g, block_k) * block_k
        packed = weight.new_zeros(groups, n_phases, C_out_g, U, C_in_pad)
        bases = [0] * n_phases
        for phase, taps, base in phases:
            packed[:, phase, :, :len(taps), :C_in_g] = w[:, :, taps]
            bases[phase] = base
        return (packed.reshape(groups * n_phases * C_out_g, U * C_in_pad),
                torch.tensor(bases, dtype=torch.int32, device=weight.device), U, C_in_pad)
    return _cached_pack(weight, "tap-major", (transposed, groups, stride, padding, dilation, block_k), build)


def _packed_interleaved_weight(weight: torch.Tensor, groups: int, stride: int, padding: int, dilation: int,
                               block_k: int, phase_pad: int):
    """The transposed conv as one stride-1 conv with phase_pad rows per output channel (all phases of a time
    tile in one program): [G·C_out/G·phase_pad, U'·C_in_pad], row (g, o, φ), column (shift − lowest)·C_in_pad
    + c, zero where phase φ has no tap at that shift or φ ≥ stride; (lowest shift, U', C_in_pad)."""
    def build(weight):
        C_in, C_out_g, K = weight.shape
        C_in_g = C_in // groups
        lowest, U = interleaved_shifts(K, stride, padding, dilation)
        d_g = dilation // math.gcd(stride, dilation)
        C_in_pad = _cdiv(C_in_g, block_k) * block_k
        w = weight.reshape(groups, C_in_g, C_out_g, K).permute(0, 2, 3, 1)  # [G, C_out/G, K, C_in/G]
        packed = weight.new_zeros(groups, C_out_g, phase_pad, U, C_in_pad)
        for phase, taps, base in _phase_taps(K, stride, padding, dilation):
            for u, k in enumerate(taps):
                packed[:, :, phase, base - u * d_g - lowest, :C_in_g] = w[:, :, k]
        return packed.reshape(groups * C_out_g * phase_pad, U * C_in_pad), lowest, U, C_in_pad
    return _cached_pack(weight, "phase-interleaved", (groups, stride, padding, dilation, block_k, phase_pad), build)


_DUMMY_INT: dict[torch.device, torch.Tensor] = {}


def _dummy_int(device: torch.device) -> torch.Tensor:
    if device not in _DUMMY_INT:
        _DUMMY_INT[device] = torch.zeros(1, dtype=torch.int32, device=device)
    return _DUMMY_INT[device]
