"""Which tiles the attention kernels run on, per dot form and head block, and the decode plan (tile, fused or
separate combine, splits)."""
from __future__ import annotations

from typing import NamedTuple

import torch
import triton.language as tl

from tilewave.kernels.attention.common import _cdiv, _dot_form, _pick, _sm_count


COMBINE_BLOCK_S = 32  # splits merged per step of the separate decode combine pass

# Warps of the separate combine: one warp per (batch, head), the fastest (benchmarks/TILE_HISTORY.md).
COMBINE_WARPS = 1

_KPM_SCAN: tl.constexpr = tl.constexpr(1024)  # key-padding mask bytes a forward program scans per step

# The fused decode merge (the last split of a head tile folds every split's partials): (head rows at a time,
# partial elements a step, pipeline stages); 16 rows, 2 splits a step, unpipelined: faster than the 8-row pipelined
# forms (benchmarks/TILE_HISTORY.md).
_DEC_MERGE = (16, 2048, 1)

# (BLOCK_M, BLOCK_N, num_warps, num_stages). The CPU interpreter runs one program at a time, so its tiles
# are the smallest that tl.dot accepts on the GPU too (16). GPU tiles, per dot form (16-bit operands,
# tf32, tf32x3 = three tf32 MMAs per product, or exact float32 'ieee' which runs on FMA units and needs
# far more registers), are the largest that compile for sm_90 without register spills at head dim 128.
_FWD_CPU = (16, 16, 4, 1)

# (BLOCK_M, BLOCK_N, num_warps, num_stages) per dot form, the largest that compile for sm_90 without spills;
# tf32x3 (high and low parts of each operand) and exact float32 per head block (benchmarks/TILE_HISTORY.md).
_FWD_GPU = {"16bit": (64, 64, 4, 3), "tf32": (64, 32, 4, 2), "tf32x3": {64: (32, 32, 4, 2), 128: (16, 32, 4, 2)},
            "ieee": {64: (32, 16, 4, 1), 128: (32, 16, 8, 1)}}


# with a key-padding mask (its scan takes registers): the tf32x3 tiles that do not spill
_FWD_GPU_KPM = {"tf32x3": {64: (64, 32, 4, 2), 128: (16, 16, 4, 2)}}

# The relative-position kernel also holds a [BLOCK, 2·BLOCK] window of rel_emb per key block: (BLOCK, warps, stages).
_REL_CPU = (16, 4, 1)

_REL_SPLIT_D_FORMS = ("tf32x3",)

_REL_GPU = {"16bit": (32, 4, 3), "tf32": (32, 4, 2), "tf32x3": {64: (32, 4, 2), 128: (32, 8, 2)}, "ieee": (16, 8, 1)}

# Decode: (BLOCK_N, num_warps, num_stages); programs per SM the split heuristic aims for.
_DEC_CPU = (16, 4, 1)

# The decode key loop is latency-bound per step, so key blocks are as large as fit without spills.
_DEC_GPU = {"16bit": {64: (128, 8, 3), 128: (128, 8, 2)}, "tf32": (64, 8, 2),
            "tf32x3": {64: (64, 8, 2), 128: (32, 8, 2)}, "ieee": (32, 8, 2)}


DECODE_BLOCK_G = 16  # query heads per decode tile: a GQA group of <= 16 in one tile, larger groups in several

_DEC_PROGRAMS_PER_SM = 2


class _DecodePlan(NamedTuple):
    config: tuple[int, int, int]  # (BLOCK_N, num_warps, num_stages)
    fused: bool  # the last split of a head tile merges (else the separate combine launch)
    merge: tuple[int, int, int]  # the fused merge's (rows, elements a step, stages)
    q_in_loop: bool  # see _DEC_Q_IN_LOOP
    programs_per_sm: int = _DEC_PROGRAMS_PER_SM  # the split count fills the GPU to this


# Long caches (more than _DEC_FUSED_MAX_KEYS keys) by dot form and head block: 4 warps and the separate
# combine (benchmarks/TILE_HISTORY.md); a form not listed takes its _DEC_GPU config and the separate combine.
_DEC_GPU_LONG = {"16bit": {64: _DecodePlan((128, 4, 3), False, _DEC_MERGE, False),
                           128: _DecodePlan((64, 4, 3), False, _DEC_MERGE, False)},
                 "tf32x3": {64: _DecodePlan((64, 4, 3), False, _DEC_MERGE, True),
                            128: _DecodePlan((32, 4, 3), False, _DEC_MERGE, True)},
                 "tf32": {64: _DecodePlan((64, 4, 3), False, _DEC_MERGE, True),
                          128: _DecodePlan((32, 4, 3), False, _DEC_MERGE, True)},
                 "ieee": {64: _DecodePlan((32, 4, 3), False, _DEC_MERGE, True, 3),
                          128: _DecodePlan((32, 4, 2), False, _DEC_MERGE, True, 3)}}


# The fused merge saves a launch but merges every split of a tile in dependent steps: fused up to this many
# keys per (batch, KV head), where the form is not in _DEC_SHORT_SEPARATE (benchmarks/TILE_HISTORY.md).
_DEC_FUSED_MAX_KEYS = 8192

# Forms that take the separate combine (a programmatic dependent launch) at short caches too: it is faster in
# 16-bit at 4k keys (benchmarks/TILE_HISTORY.md).
_DEC_SHORT_SEPARATE = ("16bit",)

# q loaded inside the key loop (a mask that depends on the loop index keeps it there), so Triton's pipeliner
# fetches it with the first K/V tiles instead of the K/V prologue waiting behind q's store to shared memory;
# by dot form, where that is faster (benchmarks/TILE_HISTORY.md). _launch_decode's q_in_loop overrides it.
_DEC_Q_IN_LOOP = {"16bit": False, "tf32": True, "tf32x3": True, "ieee": True}

_DEC_CPU_PROGRAMS = 16  # enough splits on the interpreter that tests cross split boundaries


def _fwd_config(device: torch.device, dtype: torch.dtype, precision: str, block_d: int, has_kpm: bool):
    if device.type == "cpu":
        return _FWD_CPU
    form = _dot_form(dtype, precision)
    return _pick(_FWD_GPU_KPM if has_kpm and form in _FWD_GPU_KPM else _FWD_GPU, form, block_d)


def _decode_plan(device: torch.device, dtype: torch.dtype, precision: str, block_d: int, span: int) -> _DecodePlan:
    """What the launcher runs for `span` keys per (batch, KV head)."""
    short = span <= _DEC_FUSED_MAX_KEYS
    if device.type == "cpu":
        return _DecodePlan(_DEC_CPU, short, _DEC_MERGE, True)  # the interpreter covers the in-loop form
    form = _dot_form(dtype, precision)
    long = None if short else _DEC_GPU_LONG.get(form, {}).get(block_d)
    return long or _DecodePlan(_pick(_DEC_GPU, form, block_d), short and form not in _DEC_SHORT_SEPARATE,
                               _DEC_MERGE, _DEC_Q_IN_LOOP[form])


def _decode_splits(span: int, programs: int, device: torch.device, block_n: int,
                   num_splits: int | None, programs_per_sm: int = _DEC_PROGRAMS_PER_SM) -> tuple[int, int]:
    """(num_splits, chunk): enough splits that programs x splits fills the GPU; chunk a multiple of block_n."""
    if num_splits is None:
        if device.type == "cpu":
            target = _DEC_CPU_PROGRAMS
        else:
            target = programs_per_sm * _sm_count(device.index or 0)
        num_splits = _cdiv(target, programs)
    num_splits = max(1, min(int(num_splits), _cdiv(max(span, 1), block_n), 65535))  # grid axis 1 limit
    chunk = _cdiv(_cdiv(max(span, 1), num_splits), block_n) * block_n
    return _cdiv(max(span, 1), chunk), chunk


def _merge_block(rows: int, block_d: int, elems: int) -> int:
    return max(1, min(COMBINE_BLOCK_S, elems // (rows * block_d)))


def _merge_constexprs(block_d: int, merge: tuple[int, int, int] = _DEC_MERGE) -> dict:
    rows, elems, stages = merge
    return {"MERGE_G": rows, "BLOCK_S": _merge_block(rows, block_d, elems), "MERGE_STAGES": stages}
