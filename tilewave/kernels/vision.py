"""Vision and video front-ends.

transpose_th      x [T, H, D] → out [H, T, D], out[h, t, :] = x[t, h, :] (bit-exact copy)
resize_normalize  image [(B,) Hi, Wi, 3] interleaved, values in [0, 1] → out [(B,) 3, h, w] planar,
                  out[c, y, x] = (interp(image[..., c])(y, x) − mean_c) / std_c in one launch.
                  Source coordinate s = (o + 0.5)·Hi/h − 0.5 (align_corners=False, half-pixel centres).
                  bilinear: s clamped at 0, taps ⌊s⌋ and min(⌊s⌋ + 1, Hi − 1), weights 1 − f, f.
                  bicubic: taps ⌊s⌋ − 1 … ⌊s⌋ + 2, each clamped to the image; Keys weights with a = −0.75
                  on distances t + 1, t, 1 − t, 2 − t (t = s − ⌊s⌋); no renormalisation, no clamp of the
                  result. This is torch.nn.functional.interpolate(align_corners=False, antialias=False)
                  for upscaling and downscaling alike (downscaling aliases, as PyTorch's does). The kernel
                  forms ⌊s⌋ and s − ⌊s⌋ exactly in integers; PyTorch rounds s in float32 (~3e-5 px at
                  1000 px), which on pixel noise moves outputs by ~1e-4, so the float64 oracle is the judge.
avg_pool2d_nhwc   x [N, H, W, C] → box mean over a kh×kw window with stride and zero padding, divided by
                  the number of in-bounds taps (count_include_pad=False), floor output size
pos_emb_2d_add    tok [(B,) P, D], pos_x [W, D], pos_y [P / W, D]:
                  out[p, d] = tok[p, d] + pos_x[p % W, d] + pos_y[p // W, d]
frame_diff_luma   frames f0, f1 [(B,) H, W, 3] RGB → out [(B,) GH, GW]: cell (i, j) covers rows
                  ⌊i·H/GH⌋ … ⌈(i+1)·H/GH⌉ − 1 and columns likewise (adaptive average pooling cells);
                  out = |mean_cell(luma(f0)) − mean_cell(luma(f1))|, luma = 0.299 R + 0.587 G + 0.114 B

All are memory-bound; accumulation is float32 whatever the storage dtype. Launch invariants:
- transpose_th, pos_emb_2d_add: [rows, BLOCK_D] tiles with D innermost: 16-byte vector loads and
  stores on both sides (each row is a contiguous run of D elements).
- resize_normalize: one program per (image, output row, block of output columns); the per-row taps are
  scalars, the per-column taps vectors. Stores are planar rows: contiguous and vectorised. Loads gather
  the 3 interleaved channels of each tap as a [4, BLOCK] tile (4th lane masked); neighbouring outputs
  share taps, so after the first touch they come from L1/L2.
- avg_pool2d_nhwc: the 2-D window kernel of tilewave.kernels.conv2d with AVERAGE set.
- frame_diff_luma: one program per cell; the cell's rows are contiguous runs of 3·cell_width elements,
  read as [ROWS, BLOCK] tiles of both frames.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import rand, randn
from tilewave.kernels.conv2d import DTYPES_TL, same_dtype, window2d_nhwc, window_out_size, window_variants
from tilewave.reference.conv2d import as_pair
from tilewave.reference.vision import (LUMA_BT601, avg_pool2d_nhwc_torch, check_resize_mode, frame_diff_luma_torch,
                                       pos_emb_2d_add_torch, resize_normalize_torch, transpose_th_torch)

ROW_TILE = 2048  # elements of a [rows, BLOCK_D] tile
ROW_BLOCK_DS = (16, 32, 64, 128)
# Three gathered [rows, BLOCK_D] pointer tiles: at 4 warps the narrow-D fp16 variants spill (tilewave build).
POS_EMB_WARPS = 8
RESIZE_BLOCK = 128
CELL_ROWS, CELL_BLOCK = 8, 128
BICUBIC_A = -0.75
# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _transpose_th_kernel(x_ptr, y_ptr, T, H, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # grid: (cdiv(T, BLOCK_T), H, cdiv(D, BLOCK_D)); values are copied, never converted (exact).
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    h = tl.program_id(1)
    d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = (t < T)[:, None] & (d < D)[None, :]
    v = tl.load(x_ptr + (t.to(tl.int64) * H + h)[:, None] * D + d[None, :], mask=mask)
    tl.store(y_ptr + (h.to(tl.int64) * T + t)[:, None] * D + d[None, :], v, mask=mask)


@triton.jit
def _keys_cubic(d):
    # Keys' cubic convolution weight at distance d in [0, 2] with a = -0.75 (PyTorch's bicubic):
    # near = ((a + 2) d - (a + 3)) d^2 + 1, far = ((a d - 5a) d + 8a) d - 4a.
    near = (1.25 * d - 2.25) * d * d + 1.0
    far = ((-0.75 * d + 3.75) * d - 6.0) * d + 3.0
    return tl.where(d <= 1.0, near, far)


@triton.jit
def _gather_rgb(x_ptr, img, row, cols, W, ch, mask):
    # [4, BLOCK] tile of the 3 interleaved channels at pixels (row, cols); lane 3 masked off.
    return tl.load(x_ptr + img + (row.to(tl.int64) * W + cols)[None, :] * 3 + ch[:, None], mask=mask,
                   other=0.0).to(tl.float32)


@triton.jit
def _source_index(o, n_in, n_out):
    # s = (o + 0.5) n_in / n_out - 0.5 as floor(s) and s - floor(s), exactly: with q = (2o + 1) n_in + n_out
    # (kept positive so that integer division floors in every backend), s + 1 = q / (2 n_out).
    q = (2 * o + 1) * n_in + n_out
    return q // (2 * n_out) - 1, (q % (2 * n_out)).to(tl.float32) / (2.0 * n_out)


@triton.jit
def _resize_normalize_kernel(x_ptr, mean_ptr, std_ptr, y_ptr, Hi, Wi, Ho, Wo,
                             BICUBIC: tl.constexpr, BLOCK: tl.constexpr):
    # grid: (B*Ho, cdiv(Wo, BLOCK)).
    pid = tl.program_id(0)
    b = pid // Ho
    oy = pid % Ho
    ox = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ch = tl.arange(0, 4)
    x_ok = ox < Wo
    mask = (ch < 3)[:, None] & x_ok[None, :]
    img = b.to(tl.int64) * Hi * Wi * 3
    iy, ty = _source_index(oy, Hi, Ho)
    ix, tx = _source_index(ox, Wi, Wo)
    acc = tl.zeros((4, BLOCK), dtype=tl.float32)
    if BICUBIC:
        for i in tl.static_range(4):
            row = tl.minimum(tl.maximum(iy + (i - 1), 0), Hi - 1)
            racc = tl.zeros((4, BLOCK), dtype=tl.float32)
            for j in tl.static_range(4):
                cols = tl.minimum(tl.maximum(ix + (j - 1), 0), Wi - 1)
                wx = _keys_cubic(tl.abs(tx + (1.0 - j)))
                racc += _gather_rgb(x_ptr, img, row, cols, Wi, ch, mask) * wx[None, :]
            acc += _keys_cubic(tl.abs(ty + (1.0 - i))) * racc
    else:
        # bilinear clamps s at 0: floor -1 (s in [-0.5, 0)) becomes tap 0 with weight 1
        ly = tl.where(iy < 0, 0.0, ty)
        lx = tl.where(ix < 0, 0.0, tx)[None, :]
        y0 = tl.maximum(iy, 0)
        x0 = tl.maximum(ix, 0)
        y1 = tl.minimum(y0 + 1, Hi - 1)
        x1 = tl.minimum(x0 + 1, Wi - 1)
        top = (_gather_rgb(x_ptr, img, y0, x0, Wi, ch, mask) * (1.0 - lx)
               + _gather_rgb(x_ptr, img, y0, x1, Wi, ch, mask) * lx)
        bottom = (_gather_rgb(x_ptr, img, y1, x0, Wi, ch, mask) * (1.0 - lx)
                  + _gather_rgb(x_ptr, img, y1, x1, Wi, ch, mask) * lx)
        acc = top * (1.0 - ly) + bottom * ly
    mean = tl.load(mean_ptr + ch, mask=ch < 3, other=0.0)
    std = tl.load(std_ptr + ch, mask=ch < 3, other=1.0)
    v = (acc - mean[:, None]) / std[:, None]
    plane = Ho * Wo
    dst = (b * 3 + ch).to(tl.int64)[:, None] * plane + (oy * Wo + ox)[None, :]
    tl.store(y_ptr + dst, v.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _pos_emb_2d_add_kernel(tok_ptr, px_ptr, py_ptr, y_ptr, R, P, W, D,
                           BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    # grid: (cdiv(R, BLOCK_R), cdiv(D, BLOCK_D)); R = B*P token rows; integer division per row, not per element.
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = (r < R)[:, None] & (d < D)[None, :]
    p = r % P
    offs = r.to(tl.int64)[:, None] * D + d[None, :]
    v = tl.load(tok_ptr + offs, mask=mask).to(tl.float32)
    v += tl.load(px_ptr + (p % W)[:, None] * D + d[None, :], mask=mask).to(tl.float32)
    v += tl.load(py_ptr + (p // W)[:, None] * D + d[None, :], mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, v.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _frame_diff_luma_kernel(f0_ptr, f1_ptr, y_ptr, H, W, GH, GW, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # grid: (B*GH*GW,): one program per cell, cells as in adaptive average pooling.
    pid = tl.program_id(0)
    cx = pid % GW
    cy = (pid // GW) % GH
    b = pid // (GW * GH)
    y0 = (cy * H) // GH
    y1 = ((cy + 1) * H + GH - 1) // GH
    x0 = (cx * W) // GW
    x1 = ((cx + 1) * W + GW - 1) // GW
    span = (x1 - x0) * 3
    r = tl.arange(0, ROWS)
    e = tl.arange(0, BLOCK)
    base = b.to(tl.int64) * H * W * 3 + x0 * 3
    acc = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for yy in range(y0, y1, ROWS):
        rows = yy + r
        for xx in range(0, span, BLOCK):
            ee = xx + e
            mask = (rows < y1)[:, None] & (ee < span)[None, :]
            offs = base + rows.to(tl.int64)[:, None] * (W * 3) + ee[None, :]
            d = (tl.load(f0_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                 - tl.load(f1_ptr + offs, mask=mask, other=0.0).to(tl.float32))
            ch = ee % 3  # x0 * 3 is a pixel boundary, so lane ee holds channel ee % 3
            wt = tl.where(ch == 0, 0.299, tl.where(ch == 1, 0.587, 0.114))
            acc += d * wt[None, :]
    total = tl.sum(tl.sum(acc, axis=1), axis=0)
    count = ((y1 - y0) * (x1 - x0)).to(tl.float32)
    tl.store(y_ptr + pid, (tl.abs(total) / count).to(y_ptr.dtype.element_ty))


# ---------------------------------------------------------------------------------------------------
# launchers
# ---------------------------------------------------------------------------------------------------
def _contiguous(x: torch.Tensor, name: str, layout: str) -> None:
    if not x.is_contiguous():
        raise ValueError(f"{name}: input must be a contiguous {layout} tensor, got shape {tuple(x.shape)} "
                         f"strides {x.stride()}")


def row_blocks(D: int) -> tuple[int, int]:
    """(BLOCK_ROWS, BLOCK_D) for [rows, D] tiles: D's power of two up to 128, rows filling ROW_TILE."""
    block_d = next(b for b in ROW_BLOCK_DS if b >= min(D, ROW_BLOCK_DS[-1]))
    return ROW_TILE // block_d, block_d


def transpose_th(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    if x.dim() != 3:
        raise ValueError(f"transpose_th: x must be [T, H, D], got shape {tuple(x.shape)}")
    _contiguous(x, "transpose_th", "[T, H, D]")
    T, H, D = x.shape
    out = x.new_empty(H, T, D) if out is None else out
    if x.numel():
        BLOCK_T, BLOCK_D = row_blocks(D)
        _transpose_th_kernel[(triton.cdiv(T, BLOCK_T), H, triton.cdiv(D, BLOCK_D))](
            x, out, T, H, D, BLOCK_T=BLOCK_T, BLOCK_D=BLOCK_D, num_warps=4)
    return out


def _mean_std(v, device, name: str) -> torch.Tensor:
    t = torch.as_tensor(v, dtype=torch.float32, device=device).reshape(-1)
    if t.numel() != 3:
        raise ValueError(f"resize_normalize: {name} needs one value per RGB channel (3), got {t.numel()}")
    return t.contiguous()


def resize_normalize(image: torch.Tensor, size, mean, std, mode: str = "bicubic",
                     out: torch.Tensor | None = None) -> torch.Tensor:
    check_resize_mode(mode)
    if image.dim() not in (3, 4) or image.shape[-1] != 3:
        raise ValueError(f"resize_normalize: image must be [H, W, 3] or [B, H, W, 3] (interleaved RGB), "
                         f"got shape {tuple(image.shape)}")
    _contiguous(image, "resize_normalize", "[(B,) H, W, 3]")
    Ho, Wo = as_pair(size, "size")
    if Ho < 1 or Wo < 1:
        raise ValueError(f"resize_normalize: output size must be positive, got {size}")
    Hi, Wi = image.shape[-3], image.shape[-2]
    if max((2 * Ho + 1) * Hi, (2 * Wo + 1) * Wi) >= 2**31 - max(Ho, Wo):
        raise ValueError(f"resize_normalize: {Hi}x{Wi} -> {Ho}x{Wo} overflows the kernel's 32-bit exact "
                         f"source coordinates; resize in two steps")
    B = image.numel() // (Hi * Wi * 3) if image.numel() else 0
    out = image.new_empty(*image.shape[:-3], 3, Ho, Wo) if out is None else out
    mean, std = _mean_std(mean, image.device, "mean"), _mean_std(std, image.device, "std")
    if B:
        _resize_normalize_kernel[(B * Ho, triton.cdiv(Wo, RESIZE_BLOCK))](
            image, mean, std, out, Hi, Wi, Ho, Wo,
            BICUBIC=mode == "bicubic", BLOCK=RESIZE_BLOCK, num_warps=4)
    return out


def pool_window(kernel, stride, padding) -> tuple[tuple[int, int], ...]:
    """(kernel, stride, padding) as (height, width) pairs; stride None means the kernel size."""
    kernel = as_pair(kernel, "kernel")
    return kernel, kernel if stride is None else as_pair(stride, "stride"), as_pair(padding, "padding")


def avg_pool2d_nhwc(x: torch.Tensor, kernel, stride=None, padding=0, out: torch.Tensor | None = None):
    return window2d_nhwc(x, None, None, *pool_window(kernel, stride, padding), True, out, "avg_pool2d_nhwc")


def pos_emb_2d_add(tok: torch.Tensor, pos_x: torch.Tensor, pos_y: torch.Tensor,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    _contiguous(tok, "pos_emb_2d_add", "[(B,) P, D]")
    P, D = tok.shape[-2], tok.shape[-1]
    W, Hg = pos_x.shape[0], pos_y.shape[0]
    if pos_x.shape != (W, D) or pos_y.shape != (Hg, D) or W * Hg != P:
        raise ValueError(f"pos_emb_2d_add: need pos_x [W, D={D}] and pos_y [H, D] with H*W = P = {P}, got "
                         f"pos_x {tuple(pos_x.shape)} and pos_y {tuple(pos_y.shape)}")
    same_dtype("pos_emb_2d_add", tok=tok, pos_x=pos_x, pos_y=pos_y)
    out = torch.empty_like(tok) if out is None else out
    R = tok.numel() // D if tok.numel() else 0
    if R:
        BLOCK_R, BLOCK_D = row_blocks(D)
        _pos_emb_2d_add_kernel[(triton.cdiv(R, BLOCK_R), triton.cdiv(D, BLOCK_D))](
            tok, pos_x.contiguous(), pos_y.contiguous(), out, R, P, W, D,
            BLOCK_R=BLOCK_R, BLOCK_D=BLOCK_D, num_warps=POS_EMB_WARPS)
    return out


def frame_diff_luma(f0: torch.Tensor, f1: torch.Tensor, grid, out: torch.Tensor | None = None):
    if f0.shape != f1.shape or f0.dim() not in (3, 4) or f0.shape[-1] != 3:
        raise ValueError(f"frame_diff_luma: frames must both be [(B,) H, W, 3] RGB of one shape, got "
                         f"{tuple(f0.shape)} and {tuple(f1.shape)}")
    same_dtype("frame_diff_luma", f0=f0, f1=f1)
    _contiguous(f0, "frame_diff_luma", "[(B,) H, W, 3]")
    _contiguous(f1, "frame_diff_luma", "[(B,) H, W, 3]")
    GH, GW = as_pair(grid, "grid")
    H, W = f0.shape[-3], f0.shape[-2]
    if not (1 <= GH <= H and 1 <= GW <= W):
        raise ValueError(f"frame_diff_luma: grid {grid} must have 1..{H} rows and 1..{W} columns of cells")
    out = f0.new_empty(*f0.shape[:-3], GH, GW) if out is None else out
    if out.numel():
        _frame_diff_luma_kernel[(out.numel(),)](f0, f1, out, H, W, GH, GW,
                                                ROWS=CELL_ROWS, BLOCK=CELL_BLOCK, num_warps=4)
    return out


# ---------------------------------------------------------------------------------------------------
# float64 oracles (the PyTorch peers, also the CPU path of tilewave.ops: tilewave/reference/vision.py)
# ---------------------------------------------------------------------------------------------------
def transpose_th_oracle(x):
    return torch.from_numpy(np.ascontiguousarray(np.swapaxes(x.numpy(), 0, 1)))


def interp_matrix(n_in: int, n_out: int, mode: str) -> np.ndarray:
    """[n_out, n_in] float64 weights of one axis of the resize (the formulas of the module doc)."""
    def keys(d):
        a = BICUBIC_A
        return ((a + 2) * d - (a + 3)) * d * d + 1 if d <= 1 else ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        s = (o + 0.5) * n_in / n_out - 0.5
        if mode == "bilinear":
            s = max(s, 0.0)
            i0 = math.floor(s)
            m[o, i0] += 1 - (s - i0)
            m[o, min(i0 + 1, n_in - 1)] += s - i0
        else:
            i0 = math.floor(s)
            for k in range(4):
                m[o, min(max(i0 - 1 + k, 0), n_in - 1)] += keys(abs(s - i0 + 1 - k))
    return m


def resize_normalize_oracle(image, size, mean, std, mode="bicubic"):
    img = image.numpy()
    Ho, Wo = as_pair(size, "size")
    my = interp_matrix(img.shape[-3], Ho, mode)
    mx = interp_matrix(img.shape[-2], Wo, mode)
    H, W = img.shape[-3:-1]
    rows = (my @ img.reshape(*img.shape[:-3], H, W * 3)).reshape(*img.shape[:-3], Ho, W, 3)
    y = np.moveaxis(rows, -1, -3) @ mx.T  # [..., 3, Ho, W] @ [W, Wo]
    mean = np.asarray(mean, dtype=np.float64).reshape(3, 1, 1)
    std = np.asarray(std, dtype=np.float64).reshape(3, 1, 1)
    return torch.from_numpy((y - mean) / std)


def avg_pool2d_nhwc_oracle(x, kernel, stride=None, padding=0):
    (kh, kw), (sh, sw), (ph, pw) = pool_window(kernel, stride, padding)
    x = x.numpy()
    Ho, Wo = window_out_size(x.shape[1], x.shape[2], (kh, kw), (sh, sw), (ph, pw))
    xp = np.pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    inside = np.pad(np.ones(x.shape[1:3]), ((ph, ph), (pw, pw)))
    total, count = 0.0, 0.0
    for i in range(kh):
        for j in range(kw):
            rows, cols = slice(i, i + sh * (Ho - 1) + 1, sh), slice(j, j + sw * (Wo - 1) + 1, sw)
            total = total + xp[:, rows, cols, :]
            count = count + inside[rows, cols]
    return torch.from_numpy(total / count[None, :, :, None])


def pos_emb_2d_add_oracle(tok, pos_x, pos_y):
    tok, px, py = tok.numpy(), pos_x.numpy(), pos_y.numpy()
    p = np.arange(tok.shape[-2])
    W = px.shape[0]
    return torch.from_numpy(tok + px[p % W] + py[p // W])


def frame_diff_luma_oracle(f0, f1, grid):
    GH, GW = as_pair(grid, "grid")
    diff = (f0.numpy() - f1.numpy()) @ np.array(LUMA_BT601)
    H, W = diff.shape[-2:]
    out = np.empty(diff.shape[:-2] + (GH, GW))
    for i in range(GH):
        for j in range(GW):
            rows = slice(i * H // GH, -(-(i + 1) * H // GH))
            cols = slice(j * W // GW, -(-(j + 1) * W // GW))
            out[..., i, j] = np.abs(diff[..., rows, cols].mean(axis=(-2, -1)))
    return torch.from_numpy(out)


# ---------------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------------
def _elems(shape) -> int:
    return math.prod(shape)


def _row_variants(fn, pointers, ints, rows_name, num_warps=4):
    """One variant per storage dtype and per BLOCK_D that row_blocks can pick."""
    return [AotVariant(f"{fn.__name__}[{dt},BLOCK_D={bd}]", fn,
                       {**{p: f"*{dt}" for p in pointers}, **{i: "i32" for i in ints}},
                       {rows_name: ROW_TILE // bd, "BLOCK_D": bd}, num_warps=num_warps)
            for dt in DTYPES_TL for bd in ROW_BLOCK_DS]


register(Kernel(
    name="transpose_th", family="vision", used_by=(), doc="out[h, t, :] = x[t, h, :]; [T, H, D] -> [H, T, D], exact",
    make_inputs=lambda p, dt, dev, g: {"x": randn(p["shape"], dt, dev, g)},
    alloc_out=lambda i: i["x"].new_empty(i["x"].shape[1], i["x"].shape[0], i["x"].shape[2]),
    launch=transpose_th, oracle=transpose_th_oracle, peer=transpose_th_torch,
    cases=[Case({"shape": (37, 3, 80)}), Case({"shape": (5, 7, 9)}), Case({"shape": (130, 2, 64)}),
           Case({"shape": (1024, 16, 80)}, devices=("cuda",)), Case({"shape": (729, 16, 72)}, devices=("cuda",)),
           Case({"shape": (4099, 12, 128)}, devices=("cuda",)), Case({"shape": (333, 5, 200)}, devices=("cuda",))],
    # Qwen2.5-VL vision attention (1024 patches, 16 heads x 80), SigLIP-so400m (729 x 16 x 72), a long one.
    bench=[BenchShape(label, {"shape": s}, flops=lambda p: 0, bytes=lambda p, it: 2 * it * _elems(p["shape"]))
           for label, s in (("Qwen2.5-VL vision heads [1024, 16, 80]", (1024, 16, 80)),
                            ("SigLIP-so400m heads [729, 16, 72]", (729, 16, 72)),
                            ("large [65536, 16, 128]", (65536, 16, 128)))],
    variants=lambda: _row_variants(_transpose_th_kernel, ("x_ptr", "y_ptr"), ("T", "H", "D"), "BLOCK_T"),
))


def _resize_inputs(p, dtype, device, gen):
    B, H, W = p["shape"]
    shape = (H, W, 3) if B == 0 else (B, H, W, 3)
    return {"image": rand(shape, dtype, device, gen), "size": p["size"],
            "mean": rand((3,), torch.float32, device, gen, 0.3, 0.6),
            "std": rand((3,), torch.float32, device, gen, 0.2, 0.6), "mode": p["mode"]}


def _resize_out(i):
    img = i["image"]
    return img.new_empty(*img.shape[:-3], 3, *as_pair(i["size"], "size"))


def _resize_taps(p) -> int:
    return 2 if p["mode"] == "bilinear" else 4


def _resize_flops(p):
    B, _, _ = p["shape"]
    h, w = p["size"]
    return max(B, 1) * 3 * h * w * (2 * _resize_taps(p) ** 2 + 2)


def _resize_bytes(p, itemsize):
    # a downscale touches only the rows and columns its taps land on
    B, H, W = p["shape"]
    h, w = p["size"]
    k = _resize_taps(p)
    return itemsize * max(B, 1) * 3 * (min(H, k * h) * min(W, k * w) + h * w)


# shape = (B, H, W): B = 0 means an unbatched [H, W, 3] image
register(Kernel(
    name="resize_normalize", family="vision", used_by=(),
    doc="[(B,) H, W, 3] in [0,1] -> bilinear/bicubic resize (align_corners=False) -> (v - mean_c)/std_c "
        "-> [(B,) 3, h, w]",
    make_inputs=_resize_inputs, alloc_out=_resize_out,
    launch=resize_normalize, oracle=resize_normalize_oracle, peer=resize_normalize_torch,
    cases=[
        Case({"shape": (0, 13, 17), "size": (9, 23), "mode": "bilinear"}),
        Case({"shape": (0, 13, 17), "size": (9, 23), "mode": "bicubic"}),
        Case({"shape": (2, 20, 12), "size": (7, 5), "mode": "bicubic"}),
        Case({"shape": (0, 5, 6), "size": (16, 11), "mode": "bicubic"}),
        Case({"shape": (0, 31, 8), "size": (3, 29), "mode": "bilinear"}),
        Case({"shape": (0, 9, 7), "size": (1, 4), "mode": "bicubic"}),
        Case({"shape": (0, 720, 1280), "size": (448, 448), "mode": "bicubic"}, devices=("cuda",)),
        Case({"shape": (0, 480, 640), "size": (384, 384), "mode": "bilinear"}, devices=("cuda",)),
        Case({"shape": (0, 384, 384), "size": (448, 448), "mode": "bicubic"}, devices=("cuda",)),
        Case({"shape": (3, 333, 517), "size": (224, 301), "mode": "bicubic"}, devices=("cuda",)),
        Case({"shape": (0, 101, 77), "size": (384, 384), "mode": "bilinear"}, devices=("cuda",)),
        Case({"shape": (2, 1080, 1920), "size": (378, 518), "mode": "bicubic"}, devices=("cuda",)),
    ],
    # A 720p video frame into Qwen2.5-VL (448x448, bicubic), a VGA photo into SigLIP (384x384, bilinear),
    # and a batch of 16 4K frames into 1024x1024.
    bench=[BenchShape(label, params, flops=_resize_flops, bytes=_resize_bytes) for label, params in (
        ("720p frame -> 448x448 bicubic", {"shape": (0, 720, 1280), "size": (448, 448), "mode": "bicubic"}),
        ("640x480 photo -> 384x384 bilinear", {"shape": (0, 480, 640), "size": (384, 384), "mode": "bilinear"}),
        ("large 16 x 4K -> 1024x1024 bicubic", {"shape": (16, 2160, 3840), "size": (1024, 1024), "mode": "bicubic"}),
    )],
    variants=lambda: [AotVariant(f"_resize_normalize_kernel[{dt},bicubic={bc}]", _resize_normalize_kernel,
                                 {"x_ptr": f"*{dt}", "mean_ptr": "*fp32", "std_ptr": "*fp32", "y_ptr": f"*{dt}",
                                  **{k: "i32" for k in ("Hi", "Wi", "Ho", "Wo")}},
                                 {"BICUBIC": bc, "BLOCK": RESIZE_BLOCK})
                      for dt in DTYPES_TL for bc in (False, True)],
))


def _pool_inputs(p, dtype, device, gen):
    return {"x": randn(p["shape"], dtype, device, gen), "kernel": p["kernel"], "stride": p.get("stride"),
            "padding": p.get("padding", 0)}


def _pool_out(i):
    N, H, W, C = i["x"].shape
    return i["x"].new_empty(N, *window_out_size(H, W, *pool_window(i["kernel"], i["stride"], i["padding"])), C)


def _pool_sizes(p):
    N, H, W, C = p["shape"]
    window = pool_window(p["kernel"], p.get("stride"), p.get("padding", 0))
    Ho, Wo = window_out_size(H, W, *window)
    return N * H * W * C, N * Ho * Wo * C, window[0][0] * window[0][1]


register(Kernel(
    name="avg_pool2d_nhwc", family="vision", used_by=(),
    doc="out[n,oh,ow,c] = mean of the in-bounds x[n, oh*sh-ph+i, ow*sw-pw+j, c] (count_include_pad=False)",
    make_inputs=_pool_inputs, alloc_out=_pool_out,
    launch=avg_pool2d_nhwc, oracle=avg_pool2d_nhwc_oracle, peer=avg_pool2d_nhwc_torch,
    cases=[
        Case({"shape": (1, 9, 11, 24), "kernel": 3, "stride": 1, "padding": 1}),
        Case({"shape": (2, 8, 8, 40), "kernel": 2}),
        Case({"shape": (1, 13, 10, 128), "kernel": (3, 2), "stride": (2, 3), "padding": (1, 1)}),
        Case({"shape": (1, 64, 64, 1152), "kernel": 4}, devices=("cuda",)),
        Case({"shape": (2, 56, 56, 96), "kernel": 3, "stride": 1, "padding": 1}, devices=("cuda",)),
        Case({"shape": (1, 27, 27, 1152), "kernel": 3, "stride": 2, "padding": 1}, devices=("cuda",)),
        Case({"shape": (3, 37, 29, 200), "kernel": (5, 3), "stride": (2, 2), "padding": (2, 1)}, devices=("cuda",)),
    ],
    # A 64x64 grid of 1152-dim vision tokens pooled 4x4 to 256 tokens (Gemma 3's projector), a 3x3
    # stride-1 pool on a 56x56x96 map, and a large 3x3 stride-2 pool.
    bench=[BenchShape(label, params, flops=lambda p: _pool_sizes(p)[1] * _pool_sizes(p)[2],
                      bytes=lambda p, it: it * (_pool_sizes(p)[0] + _pool_sizes(p)[1]))
           for label, params in (
               ("vision tokens 4x4 pool [1, 64, 64, 1152]", {"shape": (1, 64, 64, 1152), "kernel": 4}),
               ("3x3 s1 pool [1, 56, 56, 96]", {"shape": (1, 56, 56, 96), "kernel": 3, "stride": 1, "padding": 1}),
               ("large 3x3 s2 pool [16, 128, 128, 512]",
                {"shape": (16, 128, 128, 512), "kernel": 3, "stride": 2, "padding": 1}))],
    variants=lambda: window_variants(True),
))


def _pos_inputs(p, dtype, device, gen):
    B, Hg, W, D = p["shape"]
    tok_shape = (Hg * W, D) if B == 0 else (B, Hg * W, D)
    return {"tok": randn(tok_shape, dtype, device, gen), "pos_x": randn((W, D), dtype, device, gen, scale=0.5),
            "pos_y": randn((Hg, D), dtype, device, gen, scale=0.5)}


def _pos_bytes(p, itemsize):
    B, Hg, W, D = p["shape"]
    return itemsize * D * (2 * max(B, 1) * Hg * W + Hg + W)


# shape = (B, grid rows, grid columns, D): B = 0 means unbatched [P, D] tokens
register(Kernel(
    name="pos_emb_2d_add", family="vision", used_by=(),
    doc="out[p, d] = tok[p, d] + pos_x[p % W, d] + pos_y[p // W, d]",
    make_inputs=_pos_inputs, alloc_out=lambda i: torch.empty_like(i["tok"]),
    launch=pos_emb_2d_add, oracle=pos_emb_2d_add_oracle, peer=pos_emb_2d_add_torch,
    cases=[Case({"shape": (0, 3, 5, 40)}), Case({"shape": (2, 4, 3, 130)}), Case({"shape": (0, 7, 2, 9)}),
           Case({"shape": (0, 24, 24, 1152)}, devices=("cuda",)), Case({"shape": (0, 32, 32, 1280)}, devices=("cuda",)),
           Case({"shape": (3, 27, 37, 1152)}, devices=("cuda",)), Case({"shape": (2, 13, 31, 72)}, devices=("cuda",))],
    # SigLIP at 384 (24x24 tokens x 1152), Qwen2.5-VL at 448 (32x32 x 1280), a batch of 16 at 64x64.
    bench=[BenchShape(label, {"shape": s}, flops=lambda p: 2 * max(p["shape"][0], 1) * _elems(p["shape"][1:]),
                      bytes=_pos_bytes)
           for label, s in (("SigLIP 24x24 tokens x 1152", (0, 24, 24, 1152)),
                            ("Qwen2.5-VL 32x32 tokens x 1280", (0, 32, 32, 1280)),
                            ("large 16 x 64x64 tokens x 1152", (16, 64, 64, 1152)))],
    variants=lambda: _row_variants(_pos_emb_2d_add_kernel, ("tok_ptr", "px_ptr", "py_ptr", "y_ptr"),
                                   ("R", "P", "W", "D"), "BLOCK_R", POS_EMB_WARPS),
))


def _frames_inputs(p, dtype, device, gen):
    B, H, W = p["shape"]
    shape = (H, W, 3) if B == 0 else (B, H, W, 3)
    f0 = rand(shape, torch.float32, "cpu", gen)
    # the second frame changes in blocks of 8x8 pixels only, as consecutive video frames do, so that
    # cell differences span 0 .. ~0.5 rather than averaging out
    blocks = torch.rand(shape[:-3] + (-(-H // 8), -(-W // 8), 1), generator=gen) < 0.4
    moved = blocks.repeat_interleave(8, -3).repeat_interleave(8, -2)[..., :H, :W, :].float()
    f1 = (1 - moved) * f0 + moved * torch.rand(shape, generator=gen).pow(3)
    return {"f0": f0.to(dtype).to(device), "f1": f1.to(dtype).to(device), "grid": p["grid"]}


def _frames_out(i):
    return i["f0"].new_empty(*i["f0"].shape[:-3], *as_pair(i["grid"], "grid"))


def _frames_elems(p):
    B, H, W = p["shape"]
    return max(B, 1) * H * W * 3


# shape = (B, H, W): B = 0 means one pair of unbatched [H, W, 3] frames
register(Kernel(
    name="frame_diff_luma", family="vision", used_by=(),
    doc="out[i, j] = |cell mean of luma(f0) - cell mean of luma(f1)|, luma = 0.299 R + 0.587 G + 0.114 B",
    make_inputs=_frames_inputs, alloc_out=_frames_out,
    launch=frame_diff_luma, oracle=frame_diff_luma_oracle, peer=frame_diff_luma_torch, tol_kind="reduction",
    cases=[Case({"shape": (0, 24, 40), "grid": (3, 4)}), Case({"shape": (2, 19, 23), "grid": (4, 5)}),
           Case({"shape": (0, 30, 90), "grid": (2, 1)}),
           Case({"shape": (0, 720, 1280), "grid": (18, 32)}, devices=("cuda",)),
           Case({"shape": (4, 1080, 1920), "grid": (18, 32)}, devices=("cuda",)),
           Case({"shape": (0, 479, 853), "grid": (17, 29)}, devices=("cuda",))],
    # 720p frames downscaled to 32x18 cells (a video encoder's motion gate), and a batch of 8 4K pairs.
    bench=[BenchShape(label, {"shape": s, "grid": g}, flops=lambda p: 3 * _frames_elems(p),
                      bytes=lambda p, it: it * (2 * _frames_elems(p) + max(p["shape"][0], 1) * math.prod(p["grid"])))
           for label, s, g in (("720p frame pair -> 32x18 cells", (0, 720, 1280), (18, 32)),
                               ("large 8 x 4K frame pairs -> 64x36 cells", (8, 2160, 3840), (36, 64)))],
    variants=lambda: [AotVariant(f"_frame_diff_luma_kernel[{dt}]", _frame_diff_luma_kernel,
                                 {"f0_ptr": f"*{dt}", "f1_ptr": f"*{dt}", "y_ptr": f"*{dt}",
                                  **{k: "i32" for k in ("H", "W", "GH", "GW")}},
                                 {"ROWS": CELL_ROWS, "BLOCK": CELL_BLOCK}) for dt in DTYPES_TL],
))
