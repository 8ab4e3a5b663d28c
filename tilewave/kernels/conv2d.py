"""2-D convolution front-ends for vision encoders.

depthwise_conv2d_nhwc  out[n, oh, ow, c] = bias[c] + Σ_{i<kh, j<kw} x[n, oh·sh − ph + i, ow·sw − pw + j, c]·w[c, i, j]
                       x [N, H, W, C] channel-last, w [C, kh, kw], bias [C] optional; taps outside the image
                       read 0; Ho = (H + 2ph − kh) // sh + 1, Wo likewise (PyTorch's Conv2d with groups = C).
im2col_patch           x [N, C, H, W] → out [N, gh·gw, C·p·p], gh = H // p, gw = W // p (a remainder is
                       dropped, as a stride-p Conv2d drops it); row r = gy·gw + gx, column (c, py, px):
                       out[n, r, (c·p + py)·p + px] = x[n, c, gy·p + py, gx·p + px]

Both are memory-bound. Launch invariants:
- the 2-D window kernel (shared with average pooling in tilewave.kernels.vision) runs one program per
  (n, output row, block of output columns, block of channels) over a [BLOCK_W, BLOCK_C] tile; channels
  are innermost and contiguous in NHWC, so every tap is a coalesced 16-byte vector load along C. Kernel
  size, stride and padding are runtime scalars: one compiled kernel serves every window.
- im2col runs one program per (n, c, patch row gy, block of image columns) over a [p, BLOCK_X] tile: it
  reads p image rows contiguously and writes runs of p contiguous elements per patch row.
Accumulation is float32 whatever the storage dtype; im2col moves values bit-exactly.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import randn
from tilewave.reference.conv2d import as_pair, depthwise_conv2d_nhwc_torch, im2col_patch_torch

# elements of the [BLOCK_W, BLOCK_C] tile: 8 fp32 accumulators (two 16-byte vectors) per thread at 4 warps;
# small enough that a 56x56x96 map still spreads over ~340 programs
WINDOW_TILE = 1024
IM2COL_BLOCK_X = 128
IM2COL_P_PADS = (16, 32)  # patch sizes up to 16 (14, 16 in practice) and up to 32
DTYPES_TL = ("fp32", "fp16", "bf16")


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _window2d_nhwc_kernel(x_ptr, w_ptr, b_ptr, y_ptr, H, W, C, Ho, Wo, KH, KW, SH, SW, PH, PW,
                          AVERAGE: tl.constexpr, HAS_BIAS: tl.constexpr,
                          BLOCK_W: tl.constexpr, BLOCK_C: tl.constexpr):
    # grid: (N*Ho, cdiv(Wo, BLOCK_W), cdiv(C, BLOCK_C)).
    # AVERAGE: box mean over the in-bounds taps (count_include_pad=False); else depthwise weights w[c, i, j].
    pid = tl.program_id(0)
    n = pid // Ho
    oh = pid % Ho
    ow = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    c = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = c < C
    acc = tl.zeros((BLOCK_W, BLOCK_C), dtype=tl.float32)
    ih0 = oh * SH - PH
    iw0 = ow * SW - PW
    for i in range(0, KH):
        ih = ih0 + i
        row_ok = (ih >= 0) & (ih < H)
        # 64-bit arithmetic once per image row, 32-bit within it (the launcher keeps W·C < 2^31): per-element
        # 64-bit offsets made the launched fp32 forms spill (the gate's recorded-launch compile)
        x_row = x_ptr + (n * H + ih).to(tl.int64) * W * C
        for j in range(0, KW):
            iw = iw0 + j
            # `!= 0`: the interpreter splats a scalar bool as int32 and Triton 3.9's refuses a non-bool mask; compiled,
            # the comparison folds away (the same PTX as without it)
            ok = ((iw >= 0) & (iw < W) & row_ok) != 0
            v = tl.load(x_row + (iw[:, None] * C + c[None, :]), mask=ok[:, None] & c_ok[None, :],
                        other=0.0).to(tl.float32)
            if AVERAGE:
                acc += v
            else:
                wt = tl.load(w_ptr + c * (KH * KW) + (i * KW + j), mask=c_ok, other=0.0).to(tl.float32)
                acc += v * wt[None, :]
    if AVERAGE:
        # in-bounds taps per output: the divisor of count_include_pad=False
        rows = tl.minimum(ih0 + KH, H) - tl.maximum(ih0, 0)
        cols = tl.minimum(iw0 + KW, W) - tl.maximum(iw0, 0)
        # max(., 1) only keeps lanes past the last output (masked at the store) finite
        acc = acc / tl.maximum(rows * cols, 1).to(tl.float32)[:, None]
    if HAS_BIAS:
        acc += tl.load(b_ptr + c, mask=c_ok, other=0.0).to(tl.float32)[None, :]
    y_row = y_ptr + (n * Ho + oh).to(tl.int64) * Wo * C
    tl.store(y_row + (ow[:, None] * C + c[None, :]), acc.to(y_ptr.dtype.element_ty),
             mask=(ow < Wo)[:, None] & c_ok[None, :])


@triton.jit
def _im2col_patch_kernel(x_ptr, y_ptr, C, H, W, GH, GW, P, P_PAD: tl.constexpr, BLOCK_X: tl.constexpr):
    # grid: (N*C*GH, cdiv(GW*P, BLOCK_X)); a [P_PAD, BLOCK_X] tile of image rows gy*P .. gy*P + P - 1.
    pid = tl.program_id(0)
    gy = pid % GH
    nc = pid // GH
    c = nc % C
    n = nc // C
    py = tl.arange(0, P_PAD)
    xs = tl.program_id(1) * BLOCK_X + tl.arange(0, BLOCK_X)
    mask = (py < P)[:, None] & (xs < GW * P)[None, :]
    src = (nc.to(tl.int64) * H + gy * P + py)[:, None] * W + xs[None, :]
    v = tl.load(x_ptr + src, mask=mask)
    gx = xs // P
    px = xs % P
    out_row = (n.to(tl.int64) * GH + gy) * GW + gx
    dst = out_row[None, :] * (C * P * P) + c * (P * P) + py[:, None] * P + px[None, :]
    tl.store(y_ptr + dst, v, mask=mask)


# ---------------------------------------------------------------------------------------------------
# launchers
# ---------------------------------------------------------------------------------------------------
def same_dtype(name: str, **tensors: torch.Tensor | None) -> None:
    """The compiled variants take one storage dtype for all tensor arguments of a launch."""
    given = {k: t.dtype for k, t in tensors.items() if t is not None}
    if len(set(given.values())) > 1:
        raise ValueError(f"{name}: tensors must share one dtype, got {given}; convert them with .to(dtype)")


def window_blocks(C: int) -> tuple[int, int]:
    """(BLOCK_W, BLOCK_C): 128 channels when C is a multiple of 128, else 32 (96, 192, ... waste nothing)."""
    block_c = 128 if C % 128 == 0 else 32
    return WINDOW_TILE // block_c, block_c


def window_out_size(H: int, W: int, kernel, stride, padding) -> tuple[int, int]:
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    return (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1


def window2d_nhwc(x, weight, bias, kernel, stride, padding, average: bool, out, name: str):
    """Launch the shared window kernel; validates what a caller can get wrong."""
    if x.dim() != 4 or not x.is_contiguous():
        raise ValueError(f"{name}: x must be a contiguous [N, H, W, C] tensor, got shape {tuple(x.shape)} "
                         f"strides {x.stride()} (call .contiguous() on a channel-last tensor)")
    N, H, W, C = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    if min(kh, kw, sh, sw) < 1 or min(ph, pw) < 0:
        raise ValueError(f"{name}: need kernel, stride >= 1 and padding >= 0, got kernel {kernel}, "
                         f"stride {stride}, padding {padding}")
    if average and (ph > kh // 2 or pw > kw // 2):
        # a window wholly in the padding would average zero taps
        raise ValueError(f"{name}: padding {padding} must be at most half the kernel {kernel}")
    Ho, Wo = window_out_size(H, W, kernel, stride, padding)
    if Ho < 1 or Wo < 1:
        raise ValueError(f"{name}: kernel {kernel} with padding {padding} is larger than the padded "
                         f"input {H}x{W}")
    if max(W, Wo) * C >= 2**31:  # offsets within an image row are 32-bit in the kernel
        raise ValueError(f"{name}: rows of {max(W, Wo)} x {C} elements are past the kernel's 32-bit row offsets")
    out = x.new_empty(N, Ho, Wo, C) if out is None else out
    BLOCK_W, BLOCK_C = window_blocks(C)
    grid = (N * Ho, triton.cdiv(Wo, BLOCK_W), triton.cdiv(C, BLOCK_C))
    _window2d_nhwc_kernel[grid](x, x if weight is None else weight, x if bias is None else bias, out,
                                H, W, C, Ho, Wo, kh, kw, sh, sw, ph, pw,
                                AVERAGE=average, HAS_BIAS=bias is not None,
                                BLOCK_W=BLOCK_W, BLOCK_C=BLOCK_C, num_warps=4)
    return out


def depthwise_conv2d_nhwc(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                          stride=1, padding=0, out: torch.Tensor | None = None) -> torch.Tensor:
    C = x.shape[-1]
    if weight.dim() != 3 or weight.shape[0] != C:
        raise ValueError(f"depthwise_conv2d_nhwc: weight must be [C={C}, kh, kw], got {tuple(weight.shape)}")
    if bias is not None and bias.numel() != C:
        raise ValueError(f"depthwise_conv2d_nhwc: bias must have C={C} values, got {tuple(bias.shape)}")
    same_dtype("depthwise_conv2d_nhwc", x=x, weight=weight, bias=bias)
    kernel = (weight.shape[1], weight.shape[2])
    return window2d_nhwc(x, weight.contiguous(), None if bias is None else bias.contiguous(), kernel,
                         as_pair(stride, "stride"), as_pair(padding, "padding"), False, out,
                         "depthwise_conv2d_nhwc")


def patch_grid(H: int, W: int, patch: int) -> tuple[int, int]:
    if patch < 1 or H < patch or W < patch:
        raise ValueError(f"im2col_patch: patch size {patch} must be >= 1 and fit the {H}x{W} image")
    return H // patch, W // patch


def im2col_patch(x: torch.Tensor, patch: int, out: torch.Tensor | None = None) -> torch.Tensor:
    if x.dim() != 4 or not x.is_contiguous():
        raise ValueError(f"im2col_patch: x must be a contiguous [N, C, H, W] tensor, got shape "
                         f"{tuple(x.shape)} strides {x.stride()}")
    N, C, H, W = x.shape
    GH, GW = patch_grid(H, W, patch)
    if patch > IM2COL_P_PADS[-1]:
        raise ValueError(f"im2col_patch: patch size {patch} is above the largest supported, {IM2COL_P_PADS[-1]}")
    out = x.new_empty(N, GH * GW, C * patch * patch) if out is None else out
    grid = (N * C * GH, triton.cdiv(GW * patch, IM2COL_BLOCK_X))
    p_pad = next(pp for pp in IM2COL_P_PADS if patch <= pp)
    _im2col_patch_kernel[grid](x, out, C, H, W, GH, GW, patch, P_PAD=p_pad, BLOCK_X=IM2COL_BLOCK_X, num_warps=4)
    return out


# ---------------------------------------------------------------------------------------------------
# float64 oracles (the PyTorch peers, also the CPU path of tilewave.ops: tilewave/reference/conv2d.py)
# ---------------------------------------------------------------------------------------------------
def depthwise_conv2d_nhwc_oracle(x, weight, bias=None, stride=1, padding=0):
    (sh, sw), (ph, pw) = as_pair(stride, "stride"), as_pair(padding, "padding")
    x, w = x.numpy(), weight.numpy()
    _, kh, kw = w.shape
    Ho, Wo = window_out_size(x.shape[1], x.shape[2], (kh, kw), (sh, sw), (ph, pw))
    xp = np.pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    y = np.zeros((x.shape[0], Ho, Wo, x.shape[3]))
    for i in range(kh):
        for j in range(kw):
            y += xp[:, i:i + sh * (Ho - 1) + 1:sh, j:j + sw * (Wo - 1) + 1:sw, :] * w[:, i, j]
    if bias is not None:
        y += bias.numpy()
    return torch.from_numpy(y)


def im2col_patch_oracle(x, patch):
    x = x.numpy()
    N, C, H, W = x.shape
    gh, gw = H // patch, W // patch
    out = np.empty((N, gh * gw, C * patch * patch))
    for gy in range(gh):
        for gx in range(gw):
            block = x[:, :, gy * patch:(gy + 1) * patch, gx * patch:(gx + 1) * patch]
            out[:, gy * gw + gx] = block.reshape(N, -1)
    return torch.from_numpy(out)


# ---------------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------------
def _depthwise_inputs(p, dtype, device, gen):
    N, H, W, C = p["shape"]
    kh, kw = p["kernel"]
    inputs = {"x": randn((N, H, W, C), dtype, device, gen),
              "weight": randn((C, kh, kw), dtype, device, gen, scale=1 / math.sqrt(kh * kw)),
              "bias": randn((C,), dtype, device, gen) if p.get("bias", True) else None,
              "stride": p.get("stride", 1), "padding": p.get("padding", 0)}
    return inputs


def _window_out(inputs, kernel):
    N, H, W, C = inputs["x"].shape
    Ho, Wo = window_out_size(H, W, kernel, as_pair(inputs["stride"], "stride"), as_pair(inputs["padding"], "padding"))
    return inputs["x"].new_empty(N, Ho, Wo, C)


def _window_work(p):
    N, H, W, C = p["shape"]
    Ho, Wo = window_out_size(H, W, p["kernel"], as_pair(p.get("stride", 1), "stride"),
                             as_pair(p.get("padding", 0), "padding"))
    return N * H * W * C, N * Ho * Wo * C


def _depthwise_flops(p):
    kh, kw = p["kernel"]
    return 2 * kh * kw * _window_work(p)[1]


def _depthwise_bytes(p, itemsize):
    n_in, n_out = _window_work(p)
    kh, kw = p["kernel"]
    C = p["shape"][3]
    return itemsize * (n_in + n_out + C * (kh * kw + 1))


def window_variants(average: bool) -> list[AotVariant]:
    """Every configuration window2d_nhwc can launch: both channel blocks, each dtype, bias or not."""
    ints = {k: "i32" for k in ("H", "W", "C", "Ho", "Wo", "KH", "KW", "SH", "SW", "PH", "PW")}
    biases = (False,) if average else (False, True)
    return [AotVariant(f"_window2d_nhwc_kernel[{dt},avg={average},bias={hb},BLOCK_C={bc}]", _window2d_nhwc_kernel,
                       {"x_ptr": f"*{dt}", "w_ptr": f"*{dt}", "b_ptr": f"*{dt}", "y_ptr": f"*{dt}", **ints},
                       {"AVERAGE": average, "HAS_BIAS": hb, "BLOCK_W": WINDOW_TILE // bc, "BLOCK_C": bc})
            for dt in DTYPES_TL for hb in biases for bc in (32, 128)]


register(Kernel(
    name="depthwise_conv2d_nhwc", family="conv", used_by=(),
    doc="out[n,oh,ow,c] = bias[c] + sum_ij x[n, oh*sh-ph+i, ow*sw-pw+j, c] w[c,i,j]; NHWC, weight [C, kh, kw]",
    make_inputs=_depthwise_inputs,
    alloc_out=lambda i: _window_out(i, tuple(i["weight"].shape[1:])),
    launch=depthwise_conv2d_nhwc, oracle=depthwise_conv2d_nhwc_oracle, peer=depthwise_conv2d_nhwc_torch,
    tol_kind="reduction",
    cases=[
        Case({"shape": (1, 9, 11, 24), "kernel": (3, 3), "padding": 1}),
        Case({"shape": (2, 7, 13, 40), "kernel": (3, 5), "stride": (2, 1), "padding": (1, 2), "bias": False}),
        Case({"shape": (1, 12, 10, 128), "kernel": (7, 7), "padding": 3}),
        Case({"shape": (1, 8, 9, 5), "kernel": (1, 4), "stride": 2}),
        Case({"shape": (2, 56, 56, 96), "kernel": (7, 7), "padding": 3}, devices=("cuda",)),
        Case({"shape": (1, 56, 56, 96), "kernel": (3, 3), "padding": 1}, devices=("cuda",)),
        Case({"shape": (1, 112, 112, 32), "kernel": (3, 3), "stride": 2, "padding": 1}, devices=("cuda",)),
        Case({"shape": (1, 29, 31, 768), "kernel": (7, 7), "padding": 3}, devices=("cuda",)),
        Case({"shape": (3, 33, 47, 200), "kernel": (5, 3), "stride": (1, 2), "padding": (2, 0), "bias": False},
             devices=("cuda",)),
    ],
    # ConvNeXt-T stage 1 (7x7 at 56x56x96), MobileNetV2's first depthwise (3x3 at 112x112x32), and a batch
    # of 32 stage-1 maps (~1.2 GB of fp32 activations in + out).
    bench=[BenchShape(label, params, flops=_depthwise_flops, bytes=_depthwise_bytes) for label, params in (
        ("ConvNeXt-T stage 1 dw 7x7 [1, 56, 56, 96]", {"shape": (1, 56, 56, 96), "kernel": (7, 7), "padding": 3}),
        ("MobileNetV2 dw 3x3 [1, 112, 112, 32]", {"shape": (1, 112, 112, 32), "kernel": (3, 3), "padding": 1}),
        ("large dw 7x7 [32, 56, 56, 768]", {"shape": (32, 56, 56, 768), "kernel": (7, 7), "padding": 3}),
    )],
    variants=lambda: window_variants(False),
))


def _im2col_inputs(p, dtype, device, gen):
    return {"x": randn(p["shape"], dtype, device, gen), "patch": p["patch"]}


def _im2col_bytes(p, itemsize):
    N, C, H, W = p["shape"]
    gh, gw = patch_grid(H, W, p["patch"])
    return 2 * itemsize * N * C * gh * gw * p["patch"] ** 2


def _im2col_out(i):
    N, C, H, W = i["x"].shape
    gh, gw = patch_grid(H, W, i["patch"])
    return i["x"].new_empty(N, gh * gw, C * i["patch"] ** 2)


register(Kernel(
    name="im2col_patch", family="conv", used_by=(),
    doc="out[n, gy*gw+gx, (c*p+py)*p+px] = x[n, c, gy*p+py, gx*p+px]; NCHW in, one row per p x p patch",
    make_inputs=_im2col_inputs, alloc_out=_im2col_out,
    launch=im2col_patch, oracle=im2col_patch_oracle, peer=im2col_patch_torch,
    cases=[
        Case({"shape": (1, 3, 28, 42), "patch": 14}),
        Case({"shape": (2, 3, 19, 37), "patch": 6}),
        Case({"shape": (1, 2, 16, 48), "patch": 16}),
        Case({"shape": (1, 1, 40, 70), "patch": 20}),
        Case({"shape": (1, 3, 448, 448), "patch": 14}, devices=("cuda",)),
        Case({"shape": (1, 3, 384, 384), "patch": 16}, devices=("cuda",)),
        Case({"shape": (2, 3, 378, 518), "patch": 14}, devices=("cuda",)),
        Case({"shape": (1, 3, 401, 257), "patch": 16}, devices=("cuda",)),
    ],
    # Qwen2.5-VL at 448x448 (32x32 patches of 14), SigLIP at 384x384 (24x24 patches of 16), a batch of 64.
    bench=[BenchShape(label, params, flops=lambda p: 0, bytes=_im2col_bytes) for label, params in (
        ("Qwen2.5-VL 448x448 p14 [1, 3, 448, 448]", {"shape": (1, 3, 448, 448), "patch": 14}),
        ("SigLIP 384x384 p16 [1, 3, 384, 384]", {"shape": (1, 3, 384, 384), "patch": 16}),
        ("large 64 images p14 [64, 3, 448, 448]", {"shape": (64, 3, 448, 448), "patch": 14}),
    )],
    variants=lambda: [AotVariant(f"_im2col_patch_kernel[{dt},P_PAD={pp}]", _im2col_patch_kernel,
                                 {"x_ptr": f"*{dt}", "y_ptr": f"*{dt}",
                                  **{k: "i32" for k in ("C", "H", "W", "GH", "GW", "P")}},
                                 {"P_PAD": pp, "BLOCK_X": IM2COL_BLOCK_X})
                      for dt in DTYPES_TL for pp in IM2COL_P_PADS],
))
