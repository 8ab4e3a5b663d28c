"""Normalisation over time (instance/AdaIN) and over channels (layer norm, adaptive layer norm).

adain1d         y[r, t] = act(γ_r·(x[r, t] − μ_r)·rsqrt(max(var_r, 0) + eps) + β_r)
                x [B, C, L] seen as rows r = (b, c) of length L; γ, β [B, C]; biased variance over t; act none,
                leaky_relu(slope) or snake(α_c) in the same pass (Kokoro's AdaIN is always followed by one).
layer_norm      y[r, :] = (x[r, :] − μ_r)·rsqrt(var_r + eps)·w + b over the last axis C; w, b [C] optional.
ada_layer_norm  x [B, T, C], γ, β [B, C] per sample: y[b, t, :] = γ_b·LN(x[b, t, :]) + β_b (LN without affine).
                The caller folds a model's (1 + γ) into γ.

Statistics are float32 whatever the storage dtype. adain1d rows are long (8,000-50,000 frames at the
vocoder rates) and some channels are nearly constant, where E[x²] − E[x]² in float32 is pure rounding
noise that goes negative (rsqrt → NaN for the whole utterance). The kernels therefore (1) subtract the
row's first sample before summing, so a near-constant row sums small, exactly representable differences,
and (2) take the moments chunk by chunk (ADAIN_BLOCK frames), each chunk's M2 around its own mean, and
combine the chunks' (count, mean, M2) as one [ADAIN_MAX_CHUNKS] vector (mean = Σ nᵢμᵢ / n, M2 = Σ Mᵢ +
nᵢ(μᵢ − μ)²): no cancellation anywhere. The variance is still clamped at 0 as the contract demands.

Launch invariants: inputs contiguous; adain1d: one program per row looping over its chunks (the row read
twice, the second mostly from L2), or for few long rows (Kokoro's generator: 128 rows of up to 150,000
frames, fewer rows than SMs, where a program a row leaves most of the bandwidth unused: benchmarks/RESULTS.md)
one program per (row, chunk) in two launches, the chunks' moments through a small float32 buffer. Both forms
gather the same chunk moments and combine them in the same vector arithmetic, so a row's result does not depend
on the form, the batch or the padding. layer_norm: ROWS rows of C ≤ MAX_C channels per program, the whole row
in registers (one read, one write).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import block_size, check_channel_params, randn, sin
from tilewave.reference.norm import ada_layer_norm_torch, adain1d_torch, adain_activation, per_item

ADAIN_BLOCK = 8192   # frames per statistics chunk and per program's pass: 32 elements (eight 16-byte loads in
                     # fp32) per thread at 8 warps, enough bytes in flight to stream a long row near HBM's share
ADAIN_MAX_CHUNKS = 128  # chunks per row (1,048,576 frames): their moments combine as one vector of this size
# Rows longer than one chunk are split over (row, chunk) programs when there are at most this many: fewer rows
# than the GPU's SMs leave SMs idle in the row form; 256 rows of a few chunks fill them (the split then loses)
ADAIN_SPLIT_MAX_ROWS = 128
ADAIN_ACTS = ("none", "leaky_relu", "snake")
MAX_C = 16384        # layer_norm keeps one whole row in registers
LN_TILE = 4096       # elements per layer_norm program (ROWS x BLOCK_C)
_DTYPES = ("fp32", "fp16", "bf16")


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _row_frames(len_ptr, row, C, L, HAS_LENGTHS: tl.constexpr):
    # frames of row r = (b, c) that are its item's: lengths[b] clamped to [0, L], or all L
    if HAS_LENGTHS:
        return tl.minimum(tl.maximum(tl.load(len_ptr + row // C), 0), L).to(tl.int32)
    return L


@triton.jit
def _chunk_moments(x_row, shift, start, n, BLOCK: tl.constexpr):
    # (count, mean, M2) of d = x − shift over frames start .. start + BLOCK of the row's first n, M2 around the
    # chunk's own mean: no cancellation in float32
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.where(mask, tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32) - shift, 0.0)
    count = tl.minimum(n - start, BLOCK).to(tl.float32)
    mean = tl.sum(d, axis=0) / count
    dc = tl.where(mask, d - mean, 0.0)
    return count, mean, tl.sum(dc * dc, axis=0)


@triton.jit
def _row_moments(x_row, shift, n, BLOCK: tl.constexpr, MAX_CHUNKS: tl.constexpr):
    # the (count, mean, M2) of each chunk of the row's first n frames in turn, as [MAX_CHUNKS] vectors (0 past
    # the last chunk): what _adain1d_chunk_moments_kernel writes, gathered by one program
    lane = tl.arange(0, MAX_CHUNKS)
    counts = tl.zeros((MAX_CHUNKS,), dtype=tl.float32)
    means = tl.zeros((MAX_CHUNKS,), dtype=tl.float32)
    m2s = tl.zeros((MAX_CHUNKS,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        count, mean, m2 = _chunk_moments(x_row, shift, start, n, BLOCK)
        here = lane == start // BLOCK
        counts = tl.where(here, count, counts)
        means = tl.where(here, mean, means)
        m2s = tl.where(here, m2, m2s)
    return counts, means, m2s


@triton.jit
def _row_affine(counts, means, m2s, n, g_ptr, b_ptr, eps):
    # the row's (mean of d, scale, beta) from its chunks' moments, [MAX_CHUNKS] vectors that are 0 past the
    # last chunk (exact no-ops in both sums): one arithmetic whichever kernel gathered them
    total = n.to(tl.float32)
    mean = tl.sum(counts * means, axis=0) / total
    dm = means - mean
    m2 = tl.sum(m2s + counts * (dm * dm), axis=0)
    scale = tl.load(g_ptr).to(tl.float32) * tl.rsqrt(tl.maximum(m2 / total, 0.0) + eps)
    return mean, scale, tl.load(b_ptr).to(tl.float32)


@triton.jit
def _adain_store(x_row, y_row, start, n, L, shift, mean, scale, beta, alpha, slope, ACT: tl.constexpr,
                 FAST_SIN: tl.constexpr, BLOCK: tl.constexpr):
    # frames start .. start + BLOCK: normalised, activated and stored below n, zeros from n to L (masked lanes
    # would be (0 − shift)·scale: out of range for float16 stores)
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    y = ((tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32) - shift) - mean) * scale + beta
    if ACT == "leaky_relu":
        y = tl.where(y > 0, y, y * slope)
    elif ACT == "snake":
        s = sin(alpha * y, FAST_SIN)
        y = y + s * s / (alpha + 1e-9)
    tl.store(y_row + offs, tl.where(mask, y, 0.0).to(y_row.dtype.element_ty), mask=offs < L)


@triton.jit
def _row_alpha(a_ptr, row, C, ACT: tl.constexpr):
    if ACT == "snake":
        return tl.load(a_ptr + row % C).to(tl.float32)
    return 0.0


@triton.jit
def _adain1d_rows_kernel(x_ptr, g_ptr, b_ptr, y_ptr, len_ptr, a_ptr, L, C, eps, slope,
                         HAS_LENGTHS: tl.constexpr, ACT: tl.constexpr, FAST_SIN: tl.constexpr,
                         BLOCK: tl.constexpr, MAX_CHUNKS: tl.constexpr):
    # one program per row: its chunks' moments in turn (one read), then its output (a second read, mostly L2)
    row = tl.program_id(0).to(tl.int64)
    n = _row_frames(len_ptr, row, C, L, HAS_LENGTHS)
    x_row = x_ptr + row * L
    shift = tl.load(x_row).to(tl.float32)
    counts, means, m2s = _row_moments(x_row, shift, n, BLOCK, MAX_CHUNKS)
    mean, scale, beta = _row_affine(counts, means, m2s, n, g_ptr + row, b_ptr + row, eps)
    alpha = _row_alpha(a_ptr, row, C, ACT)
    for start in range(0, L, BLOCK):
        _adain_store(x_row, y_ptr + row * L, start, n, L, shift, mean, scale, beta, alpha, slope, ACT, FAST_SIN,
                     BLOCK)


@triton.jit
def _adain1d_chunk_moments_kernel(x_ptr, len_ptr, m_ptr, L, C, HAS_LENGTHS: tl.constexpr, BLOCK: tl.constexpr,
                                  MAX_CHUNKS: tl.constexpr):
    # program (row, chunk): the chunk's (count, mean, M2) into m[row, :, chunk] ([rows, 3, MAX_CHUNKS]); chunks
    # at or past the row's frames write nothing
    row = tl.program_id(0).to(tl.int64)
    start = tl.program_id(1) * BLOCK
    n = _row_frames(len_ptr, row, C, L, HAS_LENGTHS)
    if start < n:
        x_row = x_ptr + row * L
        count, mean, m2 = _chunk_moments(x_row, tl.load(x_row).to(tl.float32), start, n, BLOCK)
        m_row = m_ptr + row * 3 * MAX_CHUNKS + tl.program_id(1)
        tl.store(m_row, count)
        tl.store(m_row + MAX_CHUNKS, mean)
        tl.store(m_row + 2 * MAX_CHUNKS, m2)


@triton.jit
def _written_moments(m_ptr, row, n, BLOCK: tl.constexpr, MAX_CHUNKS: tl.constexpr):
    # the row's chunk moments as _adain1d_chunk_moments_kernel wrote them (0 for the chunks it did not write)
    lane = tl.arange(0, MAX_CHUNKS)
    have = lane * BLOCK < n
    m_row = m_ptr + row * 3 * MAX_CHUNKS + lane
    return (tl.load(m_row, mask=have, other=0.0), tl.load(m_row + MAX_CHUNKS, mask=have, other=0.0),
            tl.load(m_row + 2 * MAX_CHUNKS, mask=have, other=0.0))


@triton.jit
def _adain1d_chunk_store_kernel(x_ptr, g_ptr, b_ptr, y_ptr, len_ptr, a_ptr, m_ptr, L, C, eps, slope,
                                HAS_LENGTHS: tl.constexpr, ACT: tl.constexpr, FAST_SIN: tl.constexpr,
                                BLOCK: tl.constexpr, MAX_CHUNKS: tl.constexpr):
    # program (row, chunk): the row's moments from _adain1d_chunk_moments_kernel's, then the chunk's output
    row = tl.program_id(0).to(tl.int64)
    n = _row_frames(len_ptr, row, C, L, HAS_LENGTHS)
    x_row = x_ptr + row * L
    counts, means, m2s = _written_moments(m_ptr, row, n, BLOCK, MAX_CHUNKS)
    mean, scale, beta = _row_affine(counts, means, m2s, n, g_ptr + row, b_ptr + row, eps)
    _adain_store(x_row, y_ptr + row * L, tl.program_id(1) * BLOCK, n, L, tl.load(x_row).to(tl.float32), mean,
                 scale, beta, _row_alpha(a_ptr, row, C, ACT), slope, ACT, FAST_SIN, BLOCK)


@triton.jit
def _adain1d_affine_kernel(x_ptr, g_ptr, b_ptr, len_ptr, m_ptr, aff_ptr, L, C, eps, HAS_LENGTHS: tl.constexpr,
                           FROM_MOMENTS: tl.constexpr, BLOCK: tl.constexpr, MAX_CHUNKS: tl.constexpr):
    # one program per row: its (shift, mean, scale, beta) into aff[row, 0:4], from the chunk moments that
    # _adain1d_chunk_moments_kernel wrote (FROM_MOMENTS) or gathered here as the row kernel does; the same
    # arithmetic as either form's store, so _adain1d_time_major_kernel writes the same values
    row = tl.program_id(0).to(tl.int64)
    n = _row_frames(len_ptr, row, C, L, HAS_LENGTHS)
    x_row = x_ptr + row * L
    shift = tl.load(x_row).to(tl.float32)
    if FROM_MOMENTS:
        counts, means, m2s = _written_moments(m_ptr, row, n, BLOCK, MAX_CHUNKS)
    else:
        counts, means, m2s = _row_moments(x_row, shift, n, BLOCK, MAX_CHUNKS)
    mean, scale, beta = _row_affine(counts, means, m2s, n, g_ptr + row, b_ptr + row, eps)
    tl.store(aff_ptr + row * 4, shift)
    tl.store(aff_ptr + row * 4 + 1, mean)
    tl.store(aff_ptr + row * 4 + 2, scale)
    tl.store(aff_ptr + row * 4 + 3, beta)


@triton.jit(do_not_specialize=["C", "L", "Lp", "left"])
def _adain1d_time_major_kernel(x_ptr, aff_ptr, y_ptr, len_ptr, a_ptr, C, L, Lp, pitch, left, slope,
                               HAS_LENGTHS: tl.constexpr, ACT: tl.constexpr, FAST_SIN: tl.constexpr,
                               BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr):
    # y[b, t, c] = adain1d's output at (b, c, t − left), 0 outside its frames and for c ≥ C (t < Lp, c < pitch):
    # the output written straight into the conv tap kernel's time-major input (kernels.conv.tap), each value as
    # _adain_store computes it. grid (cdiv(Lp, BLOCK_T), cdiv(pitch, BLOCK_C), B).
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    b = tl.program_id(2).to(tl.int64)
    row = b * C + c
    c_in = c < C
    n = _row_frames(len_ptr, b * C, C, L, HAS_LENGTHS)
    pos = t - left
    inside = c_in[:, None] & ((pos >= 0) & (pos < n))[None, :]
    shift = tl.load(aff_ptr + row * 4, mask=c_in, other=0.0)[:, None]
    mean = tl.load(aff_ptr + row * 4 + 1, mask=c_in, other=0.0)[:, None]
    scale = tl.load(aff_ptr + row * 4 + 2, mask=c_in, other=0.0)[:, None]
    beta = tl.load(aff_ptr + row * 4 + 3, mask=c_in, other=0.0)[:, None]
    y = ((tl.load(x_ptr + row[:, None] * L + pos[None, :], mask=inside, other=0.0).to(tl.float32) - shift)
         - mean) * scale + beta
    if ACT == "leaky_relu":
        y = tl.where(y > 0, y, y * slope)
    elif ACT == "snake":
        alpha = tl.load(a_ptr + c, mask=c_in, other=1.0).to(tl.float32)[:, None]
        s = sin(alpha * y, FAST_SIN)
        y = y + s * s / (alpha + 1e-9)
    y = tl.where(inside, y, 0.0).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + b * Lp * pitch + t.to(tl.int64)[:, None] * pitch + c[None, :], tl.trans(y),
             mask=(t < Lp)[:, None] & (c < pitch)[None, :])


@triton.jit
def _layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, C, rows_per_group, eps,
                       HAS_W: tl.constexpr, HAS_B: tl.constexpr, ROWS: tl.constexpr, BLOCK_C: tl.constexpr):
    # Row r takes its affine parameters from row r // rows_per_group of w/b ([groups, C]): a plain
    # layer norm passes rows_per_group >= n_rows (one group), the adaptive one rows_per_group = T.
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_C)
    col_mask = cols < C
    mask = (rows < n_rows)[:, None] & col_mask[None, :]
    offs = rows[:, None] * C + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / C
    d = tl.where(mask, x - mean[:, None], 0.0)
    var = tl.sum(d * d, axis=1) / C
    y = d * tl.rsqrt(var + eps)[:, None]
    p_offs = (rows // rows_per_group)[:, None] * C + cols[None, :]
    if HAS_W:
        y = y * tl.load(w_ptr + p_offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_B:
        y = y + tl.load(b_ptr + p_offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------------------
# launchers
# ---------------------------------------------------------------------------------------------------
def _require_contiguous(name: str, **tensors: torch.Tensor | None) -> None:
    for arg, t in tensors.items():
        if t is not None and not t.is_contiguous():
            raise ValueError(f"{name}: {arg} must be contiguous, got strides {t.stride()} "
                             f"for shape {tuple(t.shape)}; call .contiguous() first")


def _adain_args(name, x, gamma, beta, lengths, act, alpha):
    """adain1d's checks; (rows, C, L, chunks, alpha made contiguous) of a call that passes them."""
    _require_contiguous(name, x=x, gamma=gamma, beta=beta)
    L = x.shape[-1]
    if lengths is not None and (x.dim() != 3 or lengths.shape != (x.shape[0],)):
        raise ValueError(f"{name}: lengths must be [B] for x [B, C, L], got {tuple(lengths.shape)} for x "
                         f"{tuple(x.shape)}")
    rows = x.numel() // max(L, 1)
    if gamma.numel() != rows or beta.numel() != rows:
        raise ValueError(f"{name}: gamma and beta need one value per (batch, channel) row ({rows} for x "
                         f"{tuple(x.shape)}), got {tuple(gamma.shape)} and {tuple(beta.shape)}")
    if act not in ADAIN_ACTS:
        raise ValueError(f"{name}: act must be one of {ADAIN_ACTS}, got {act!r}")
    C = x.shape[-2] if x.dim() >= 2 else 1
    if act == "snake":
        if alpha is None:
            raise ValueError(f"{name}: act='snake' needs alpha, one value per channel")
        check_channel_params(name, C, alpha, None)
        alpha = alpha.contiguous()
    chunks = triton.cdiv(L, ADAIN_BLOCK)
    if chunks > ADAIN_MAX_CHUNKS:
        raise ValueError(f"{name}: rows of at most {ADAIN_MAX_CHUNKS * ADAIN_BLOCK} frames, got L={L}; "
                         "use the PyTorch path (tilewave.ops.norm falls back)")
    return rows, C, L, chunks, alpha


def adain1d(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5,
            out: torch.Tensor | None = None, lengths: torch.Tensor | None = None, act: str = "none",
            alpha: torch.Tensor | None = None, slope: float = 0.0, split: bool | None = None) -> torch.Tensor:
    """lengths [B] (x [B, C, L]): item b's statistics over its first lengths[b] frames, zeros past them; one
    launch, no host read of the lengths, each row bit-identical to a solo run on that many frames.
    act: the activation applied to the output in the same pass ('leaky_relu' with `slope`, 'snake' with
    `alpha` [C]), so that it needs no pass of its own. split: a row longer than one chunk over (row, chunk)
    programs, two launches (None: when there are at most ADAIN_SPLIT_MAX_ROWS rows; both forms give the same
    bits)."""
    rows, C, L, chunks, alpha = _adain_args("adain1d", x, gamma, beta, lengths, act, alpha)
    out = torch.empty_like(x) if out is None else out
    if not (rows and L):
        return out
    split = chunks > 1 and rows <= ADAIN_SPLIT_MAX_ROWS if split is None else split and chunks > 1
    len_t = x if lengths is None else lengths.to(device=x.device, dtype=torch.int64)
    a = x if alpha is None else alpha
    flags = dict(HAS_LENGTHS=lengths is not None, BLOCK=ADAIN_BLOCK, MAX_CHUNKS=ADAIN_MAX_CHUNKS, num_warps=8)
    if split:
        moments = torch.empty(rows, 3, ADAIN_MAX_CHUNKS, dtype=torch.float32, device=x.device)
        _adain1d_chunk_moments_kernel[(rows, chunks)](x, len_t, moments, L, C, **flags)
        _adain1d_chunk_store_kernel[(rows, chunks)](x, gamma, beta, out, len_t, a, moments, L, C, float(eps),
                                                    float(slope), ACT=act, FAST_SIN=x.is_cuda, **flags)
    else:
        _adain1d_rows_kernel[(rows,)](x, gamma, beta, out, len_t, a, L, C, float(eps), float(slope), ACT=act,
                                      FAST_SIN=x.is_cuda, **flags)
    return out


ADAIN_TIME_MAJOR_BLOCK = (64, 64)  # (channels, time) per program of _adain1d_time_major_kernel


def adain1d_time_major(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, left: int, Lp: int, pitch: int,
                       eps: float = 1e-5, lengths: torch.Tensor | None = None, act: str = "none",
                       alpha: torch.Tensor | None = None, slope: float = 0.0, split: bool | None = None,
                       out: torch.Tensor | None = None) -> torch.Tensor:
    """adain1d's output for x [B, C, L] written time-major: y [B, Lp, pitch], y[b, left + t, c] = adain1d(...)[b, c,
    t], zeros elsewhere (the rows before `left` and from left + L, the channels from C to pitch): the input form
    of the conv tap kernel's tensor descriptors (kernels.conv.tap), made in the norm's own pass instead of a copy
    after it. Each value has adain1d's bits (the same statistics, the same arithmetic)."""
    rows, C, L, chunks, alpha = _adain_args("adain1d_time_major", x, gamma, beta, lengths, act, alpha)
    if x.dim() != 3:
        raise ValueError(f"adain1d_time_major: x must be [B, C, L], got shape {tuple(x.shape)}")
    if left < 0 or Lp < left + L or pitch < C:
        raise ValueError(f"adain1d_time_major: need 0 <= left, left + L <= Lp and C <= pitch; got left={left}, "
                         f"L={L}, Lp={Lp}, C={C}, pitch={pitch}")
    B = x.shape[0]
    if out is None:
        out = x.new_empty(B, Lp, pitch)
    elif tuple(out.shape) != (B, Lp, pitch) or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError(f"adain1d_time_major: out must be a contiguous {(B, Lp, pitch)} {x.dtype} tensor, got "
                         f"{tuple(out.shape)} {out.dtype}")
    if not (rows and L):
        return out.zero_()
    split = chunks > 1 and rows <= ADAIN_SPLIT_MAX_ROWS if split is None else split and chunks > 1
    len_t = x if lengths is None else lengths.to(device=x.device, dtype=torch.int64)
    flags = dict(HAS_LENGTHS=lengths is not None, BLOCK=ADAIN_BLOCK, MAX_CHUNKS=ADAIN_MAX_CHUNKS, num_warps=8)
    moments = torch.empty(rows, 3, ADAIN_MAX_CHUNKS, dtype=torch.float32, device=x.device) if split else x
    if split:
        _adain1d_chunk_moments_kernel[(rows, chunks)](x, len_t, moments, L, C, **flags)
    affine = torch.empty(rows, 4, dtype=torch.float32, device=x.device)
    _adain1d_affine_kernel[(rows,)](x, gamma, beta, len_t, moments, affine, L, C, float(eps), FROM_MOMENTS=split,
                                    **flags)
    bc, bt = ADAIN_TIME_MAJOR_BLOCK
    _adain1d_time_major_kernel[(triton.cdiv(Lp, bt), triton.cdiv(pitch, bc), B)](
        x, affine, out, len_t, x if alpha is None else alpha, C, L, Lp, pitch, left, float(slope),
        HAS_LENGTHS=lengths is not None, ACT=act, FAST_SIN=x.is_cuda, BLOCK_C=bc, BLOCK_T=bt, num_warps=8)
    return out


def _layer_norm_launch(x, w, b, rows_per_group, eps, out):
    _require_contiguous("layer_norm", x=x, weight=w, bias=b)
    C = x.shape[-1]
    if C > MAX_C:
        raise ValueError(f"layer_norm: the kernel keeps a row of at most {MAX_C} channels in registers, "
                         f"got C={C}; use the PyTorch path (tilewave.ops.norm falls back) for wider rows")
    out = torch.empty_like(x) if out is None else out
    n_rows = x.numel() // max(C, 1)
    if n_rows and C:
        BLOCK_C = block_size(C, MAX_C)
        ROWS = max(1, LN_TILE // BLOCK_C)
        _layer_norm_kernel[(triton.cdiv(n_rows, ROWS),)](
            x, x if w is None else w, x if b is None else b, out, n_rows, C, max(1, rows_per_group), float(eps),
            HAS_W=w is not None, HAS_B=b is not None, ROWS=ROWS, BLOCK_C=BLOCK_C,
            num_warps=8 if BLOCK_C >= 2048 else 4)
    return out


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
               eps: float = 1e-5, out: torch.Tensor | None = None) -> torch.Tensor:
    C = x.shape[-1]
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p.numel() != C:
            raise ValueError(f"layer_norm: {name} must have C={C} values, got shape {tuple(p.shape)}")
    return _layer_norm_launch(x, weight, bias, x.numel() // max(C, 1), eps, out)


def ada_layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    if x.dim() != 3 or gamma.shape != (x.shape[0], x.shape[2]) or beta.shape != gamma.shape:
        raise ValueError(f"ada_layer_norm: expects x [B, T, C] and gamma, beta [B, C], got x {tuple(x.shape)}, "
                         f"gamma {tuple(gamma.shape)}, beta {tuple(beta.shape)}")
    return _layer_norm_launch(x, gamma, beta, x.shape[1], eps, out)


# ---------------------------------------------------------------------------------------------------
# float64 oracles (the PyTorch peers, also the CPU path of tilewave.ops.norm: tilewave/reference/norm.py)
# ---------------------------------------------------------------------------------------------------
def adain1d_oracle(x, gamma, beta, eps=1e-5, lengths=None, act="none", alpha=None, slope=0.0, split=None):
    # split: the kernel's form, which does not change its result
    if act != "none":
        return adain_activation(adain1d_oracle(x, gamma, beta, eps, lengths), act, alpha, slope)
    if lengths is not None:
        return per_item(adain1d_oracle, x, gamma, beta, eps, lengths)
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma.unsqueeze(-1) * (x - mu) / torch.sqrt(var.clamp_min(0) + eps) + beta.unsqueeze(-1)


def _ln64(x, eps):
    mu = x.mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps)


def layer_norm_oracle(x, weight=None, bias=None, eps=1e-5):
    y = _ln64(x, eps)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


def ada_layer_norm_oracle(x, gamma, beta, eps=1e-5):
    return gamma.unsqueeze(1) * _ln64(x, eps) + beta.unsqueeze(1)


# ---------------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------------
def _adain_inputs(p, dtype, device, gen):
    B, C, L = p["shape"]
    # offset + scale: per-channel means far from 0 and spread as in real feature maps; "near_constant"
    # is the rounding trap (1000 + 1e-4 noise, where float32 E[x^2] - E[x]^2 is noise around 0).
    if p.get("near_constant"):
        x = randn((B, C, L), dtype, device, gen, scale=1e-4, shift=1000.0)
    else:
        x = randn((B, C, L), torch.float32, "cpu", gen, scale=2.0) + randn((B, C, 1), torch.float32, "cpu", gen, 3.0)
        x = x.to(dtype).to(device)
    inputs = {"x": x, "gamma": randn((B, C), dtype, device, gen, scale=0.5, shift=1.0),
              "beta": randn((B, C), dtype, device, gen, scale=0.5), "eps": 1e-5}
    if p.get("lengths"):  # a padded batch: one item full, the others shorter (one of them a single frame)
        n = torch.randint(2, L, (B,), generator=gen)
        n[0], n[-1] = L, 1
        inputs["lengths"] = n.to(device)
    act = p.get("act", "none")
    if act != "none":
        inputs.update(act=act, slope=0.2 if act == "leaky_relu" else 0.0,
                      alpha=randn((C,), torch.float32, device, gen, scale=0.3, shift=1.0) if act == "snake" else None)
    if "split" in p:
        inputs["split"] = p["split"]
    return inputs


def _adain_variants():
    # the row form and the split pair per dtype, with and without lengths, with each activation
    common = {"g_ptr": "*{dt}", "b_ptr": "*{dt}", "y_ptr": "*{dt}", "len_ptr": "*i64", "a_ptr": "*fp32",
              "L": "i32", "C": "i32", "eps": "fp32", "slope": "fp32"}
    out = []
    for dt in _DTYPES:
        for lens in (False, True):
            sig = {k: v.format(dt=dt) for k, v in common.items()}
            sig["len_ptr"] = "*i64" if lens else f"*{dt}"
            tag = f"{dt}{',lengths' if lens else ''}"
            const = {"HAS_LENGTHS": lens, "BLOCK": ADAIN_BLOCK, "MAX_CHUNKS": ADAIN_MAX_CHUNKS}
            out.append(AotVariant(f"_adain1d_chunk_moments_kernel[{tag}]", _adain1d_chunk_moments_kernel,
                                  {"x_ptr": f"*{dt}", "len_ptr": sig["len_ptr"], "m_ptr": "*fp32", "L": "i32",
                                   "C": "i32"}, const, num_warps=8))
            for act in ADAIN_ACTS:
                s = dict(sig, x_ptr=f"*{dt}", a_ptr="*fp32" if act == "snake" else f"*{dt}")
                flags = dict(const, ACT=act, FAST_SIN=True)
                out.append(AotVariant(f"_adain1d_rows_kernel[{tag},{act}]", _adain1d_rows_kernel, s, flags,
                                      num_warps=8))
                out.append(AotVariant(f"_adain1d_chunk_store_kernel[{tag},{act}]", _adain1d_chunk_store_kernel,
                                      dict(s, m_ptr="*fp32"), flags, num_warps=8))
                bc, bt = ADAIN_TIME_MAJOR_BLOCK
                out.append(AotVariant(
                    f"_adain1d_time_major_kernel[{tag},{act}]", _adain1d_time_major_kernel,
                    {"x_ptr": f"*{dt}", "aff_ptr": "*fp32", "y_ptr": f"*{dt}", "len_ptr": sig["len_ptr"],
                     "a_ptr": s["a_ptr"], "C": "i32", "L": "i32", "Lp": "i32", "pitch": "i32", "left": "i32",
                     "slope": "fp32"},
                    dict(HAS_LENGTHS=lens, ACT=act, FAST_SIN=True, BLOCK_C=bc, BLOCK_T=bt), num_warps=8))
            for moments in (False, True):
                out.append(AotVariant(
                    f"_adain1d_affine_kernel[{tag}{',moments' if moments else ''}]", _adain1d_affine_kernel,
                    {"x_ptr": f"*{dt}", "g_ptr": f"*{dt}", "b_ptr": f"*{dt}", "len_ptr": sig["len_ptr"],
                     "m_ptr": "*fp32" if moments else f"*{dt}", "aff_ptr": "*fp32", "L": "i32", "C": "i32",
                     "eps": "fp32"}, dict(const, FROM_MOMENTS=moments), num_warps=8))
    return out


def _adain_bytes(p, itemsize):
    B, C, L = p["shape"]
    return itemsize * (2 * B * C * L + 2 * B * C)


register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="adain1d", family="norm", used_by=("kokoro",),
    doc="per row r over time: gamma_r (x - mu_r) rsqrt(max(var_r, 0) + eps) + beta_r, biased variance",
    make_inputs=_adain_inputs, alloc_out=lambda i: torch.empty_like(i["x"]), launch=adain1d,
    oracle=adain1d_oracle, peer=lambda split=None, **inputs: adain1d_torch(**inputs), tol_kind="reduction",
    cases=[Case({"shape": (2, 3, 77)}),
           Case({"shape": (1, 5, 2500)}),
           Case({"shape": (1, 4, 7900), "near_constant": True}),
           Case({"shape": (2, 4, 20000), "split": True}),
           Case({"shape": (2, 4, 20000), "split": False, "act": "snake"}),
           Case({"shape": (3, 6, 300), "act": "leaky_relu"}),
           Case({"shape": (2, 1024, 801)}, devices=("cuda",)),
           Case({"shape": (1, 64, 48001), "near_constant": True}, devices=("cuda",)),
           Case({"shape": (1, 128, 48000), "act": "snake"}, devices=("cuda",)),
           Case({"shape": (3, 4, 300), "lengths": True}),
           Case({"shape": (3, 4, 17000), "lengths": True, "act": "snake", "split": True}),
           Case({"shape": (4, 512, 20000), "lengths": True}, devices=("cuda",))],
    # Kokoro's decoder and generator AdaINs at 10 s of speech and its generator's at 23.4 s (383 phonemes),
    # each with the activation that follows it in the model, and one >= 256 MB input.
    bench=[BenchShape(label, {"shape": shape, "act": a}, flops=lambda p: 7 * math.prod(p["shape"]),
                      bytes=_adain_bytes)
           for label, shape, a in (("Kokoro decoder AdaIN [1, 1024, 800]", (1, 1024, 800), "leaky_relu"),
                                   ("Kokoro decoder AdaIN x2 [1, 512, 1600]", (1, 512, 1600), "leaky_relu"),
                                   ("Kokoro generator AdaIN 1 [1, 256, 8000]", (1, 256, 8000), "snake"),
                                   ("Kokoro generator AdaIN 2 [1, 128, 48000]", (1, 128, 48000), "snake"),
                                   ("Kokoro generator AdaIN 1, 383 phonemes [1, 256, 18720]", (1, 256, 18720),
                                    "snake"),
                                   ("Kokoro generator AdaIN 2, 383 phonemes [1, 128, 112320]", (1, 128, 112320),
                                    "snake"),
                                   ("large [8, 512, 16384]", (8, 512, 16384), "none"))],
    variants=lambda: _adain_variants(),
))


def _ln_inputs(p, dtype, device, gen):
    shape = p["shape"]
    C = shape[-1]
    x = randn(shape, dtype, device, gen, scale=2.0, shift=0.5)
    if p.get("ada"):
        B = shape[0]
        return {"x": x, "gamma": randn((B, C), dtype, device, gen, scale=0.5, shift=1.0),
                "beta": randn((B, C), dtype, device, gen, scale=0.5), "eps": 1e-5}
    affine = p.get("affine", True)
    return {"x": x, "weight": randn((C,), dtype, device, gen, scale=0.5, shift=1.0) if affine else None,
            "bias": randn((C,), dtype, device, gen, scale=0.5) if affine else None, "eps": 1e-5}


def _ln_bytes(p, itemsize):
    n = math.prod(p["shape"])
    params = 2 * p["shape"][-1] * (p["shape"][0] if p.get("ada") else 1)
    return itemsize * (2 * n + params)


def _ln_variants(affine_forms=((True, True), (False, False))):
    return [AotVariant(f"_layer_norm_kernel[{dt},w={hw},b={hb},C<={bc}]", _layer_norm_kernel,
                       {"x_ptr": f"*{dt}", "w_ptr": f"*{dt}", "b_ptr": f"*{dt}", "y_ptr": f"*{dt}",
                        "n_rows": "i32", "C": "i32", "rows_per_group": "i32", "eps": "fp32"},
                       {"HAS_W": hw, "HAS_B": hb, "ROWS": max(1, LN_TILE // bc), "BLOCK_C": bc},
                       num_warps=8 if bc >= 2048 else 4)
            for dt in _DTYPES for hw, hb in affine_forms for bc in (512, 1024, MAX_C)]


_LN_BENCH = (("Kokoro text encoder LN [1, 512, 512]", (1, 512, 512)),
             ("Kokoro duration encoder LN over 510 tokens [1, 510, 512]", (1, 510, 512)),
             ("large [64, 4096, 1024]", (64, 4096, 1024)))

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="layer_norm", family="norm", used_by=("kokoro",),
    doc="LayerNorm over the last axis, optional affine weight/bias [C]",
    make_inputs=_ln_inputs, alloc_out=lambda i: torch.empty_like(i["x"]), launch=layer_norm,
    oracle=layer_norm_oracle, peer=lambda x, weight, bias, eps: F.layer_norm(x, (x.shape[-1],), weight, bias, eps),
    tol_kind="reduction",
    cases=[Case({"shape": (2, 7, 33)}), Case({"shape": (3, 5, 512), "affine": False}),
           Case({"shape": (1, 9, 700)}),
           Case({"shape": (1, 510, 512)}, devices=("cuda",)), Case({"shape": (4, 333, 1000)}, devices=("cuda",)),
           Case({"shape": (2, 3, 16000)}, devices=("cuda",))],
    bench=[BenchShape(label, {"shape": shape}, flops=lambda p: 8 * math.prod(p["shape"]), bytes=_ln_bytes)
           for label, shape in _LN_BENCH],
    variants=_ln_variants,
))

register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="ada_layer_norm", family="norm", used_by=("kokoro",),
    doc="x [B, T, C], gamma/beta [B, C]: gamma_b LN(x) + beta_b",
    make_inputs=_ln_inputs, alloc_out=lambda i: torch.empty_like(i["x"]), launch=ada_layer_norm,
    oracle=ada_layer_norm_oracle, peer=ada_layer_norm_torch, tol_kind="reduction",
    cases=[Case({"shape": (2, 7, 33), "ada": True}), Case({"shape": (3, 13, 512), "ada": True}),
           Case({"shape": (1, 510, 512), "ada": True}, devices=("cuda",)),
           Case({"shape": (5, 77, 1000), "ada": True}, devices=("cuda",))],
    bench=[BenchShape(label, {"shape": shape, "ada": True}, flops=lambda p: 8 * math.prod(p["shape"]),
                      bytes=_ln_bytes) for label, shape in _LN_BENCH[1:]],
    variants=lambda: _ln_variants(((True, True),)),
))
