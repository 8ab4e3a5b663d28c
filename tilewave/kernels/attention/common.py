"""What the attention kernels share: the online-softmax step, row loads and normalised stores, argument checks,
the dot form of a precision."""
from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl

from tilewave.precision import dot_input, tile_class


LOG2E = 1.4426950408889634

MAX_HEAD_DIM = 128

GPU_HEAD_BLOCKS = (64, 128)  # D <= 64 pads to 64 on the GPU (D = 16/32 heads are rare; fewer compiled forms)


@triton.jit
def _softmax_start(M: tl.constexpr, BLOCK_D: tl.constexpr):
    # (running max, running sum, accumulator) before any key
    return (tl.full([M], float("-inf"), tl.float32), tl.zeros([M], tl.float32),
            tl.zeros([M, BLOCK_D], tl.float32))


@triton.jit
def _online_softmax_step(s, m_i, l_i, acc, v, PRECISION: tl.constexpr):
    # s: [M, N] scores in the log2 domain, -inf where masked. A row with no finite score so far keeps
    # m = -inf; subtracting a 0 instead of -inf keeps exp2 at 0 rather than NaN (inf - inf).
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m_i - m_safe)
    p = tl.exp2(s - m_safe[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return m_new, l_i, acc


@triton.jit
def _online_softmax_step_unmasked(s_raw, qk_scale, m_i, l_i, acc, v, PRECISION: tl.constexpr):
    # Every score finite and qk_scale > 0: max(s)·scale is the scaled max, so the scale folds into one FMA
    # per score (s·scale − m) and the running max never stays -inf.
    m_new = tl.maximum(m_i, tl.max(s_raw, 1) * qk_scale)
    p = tl.exp2(s_raw * qk_scale - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return m_new, l_i, acc


@triton.jit
def _load_rows(base, rows, stride, d, row_ok, d_ok):
    # [rows, BLOCK_D] tile of a [T, D] matrix with unit D stride; masked rows and padded dims read 0.
    return tl.load(base + rows[:, None] * stride + d[None, :], mask=row_ok[:, None] & d_ok[None, :], other=0.0)


@triton.jit
def _store_normalized(base, rows, stride, d, row_ok, d_ok, acc, l_i):
    # Rows that saw no key have l = 0 and acc = 0: they output 0.
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(base + rows[:, None] * stride + d[None, :], out.to(base.dtype.element_ty),
             mask=row_ok[:, None] & d_ok[None, :])


def _head_block(D: int, op: str, device: torch.device) -> int:
    """The padded head dim: a power of two; on the GPU 64 or 128 only, so two compiled forms cover every D."""
    if not 1 <= D <= MAX_HEAD_DIM:
        raise ValueError(f"{op}: head dim must be in [1, {MAX_HEAD_DIM}], got {D}")
    return max(16 if device.type == "cpu" else GPU_HEAD_BLOCKS[0], _next_pow2(D))


def _check_qkv(op: str, q, k, v, expect_dims: int = 4) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != expect_dims:
            raise ValueError(f"{op}: {name} must be {expect_dims}-D, got shape {tuple(t.shape)}")
        if t.stride(-1) != 1:
            raise ValueError(f"{op}: the last dim of {name} must be contiguous (stride 1), got strides "
                             f"{t.stride()}; call .contiguous() on it")
        if t.dtype != q.dtype or t.device != q.device:
            raise ValueError(f"{op}: q, k, v must share dtype and device, got {name} {t.dtype} on {t.device} "
                             f"vs q {q.dtype} on {q.device}")
    if k.shape != v.shape:
        raise ValueError(f"{op}: k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{op}: q and k head dims differ: {q.shape[-1]} vs {k.shape[-1]}")


def _dot_precision(dtype: torch.dtype, precision: str) -> str:
    # 16-bit operands always run on the tensor cores; the setting only means something for float32.
    return dot_input(precision, dtype, "tf32")


def _dot_form(dtype: torch.dtype, precision: str) -> str:
    return tile_class(precision, dtype)


def _pick(table: dict, form: str, block_d: int):
    """A table's config for a dot form: one tuple, or a dict of tuples by head block."""
    cfg = table[form]
    return cfg[block_d] if isinstance(cfg, dict) else cfg


def _config(device: torch.device, dtype: torch.dtype, precision: str, block_d: int, cpu, gpu: dict):
    return cpu if device.type == "cpu" else _pick(gpu, _dot_form(dtype, precision), block_d)


def _cdiv(a: int, b: int) -> int:
    # triton.cdiv is a jit function, slow to call from the host, and the decode launcher makes several
    return -(-a // b)


def _next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _out(q: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return torch.empty_like(q)
    if out.shape != q.shape or out.dtype != q.dtype or out.stride(-1) != 1:
        raise ValueError(f"out must match q: shape {tuple(q.shape)}, dtype {q.dtype}, unit last stride; "
                         f"got {tuple(out.shape)}, {out.dtype}, strides {out.stride()}")
    return out


def _scale(scale: float | None, D: int) -> float:
    return (1.0 / math.sqrt(D) if scale is None else float(scale)) * LOG2E


def _gqa_group(op: str, H: int, H_kv: int) -> int:
    if H_kv < 1 or H % H_kv:
        raise ValueError(f"{op}: query heads ({H}) must be a multiple of KV heads ({H_kv})")
    return H // H_kv
