"""Normalisation over time (instance/AdaIN) and over channels (layer norm, adaptive layer norm).

adain1d         y[r, t] = γ_r·(x[r, t] − μ_r)·rsqrt(max(var_r, 0) + eps) + β_r
                x [B, C, L] seen as rows r = (b, c) of length L; γ, β [B, C]; biased variance over t.
layer_norm      y[r, :] = (x[r, :] − μ_r)·rsqrt(var_r + eps)·w + b over the last axis C; w, b [C] optional.
ada_layer_norm  x [B, T, C], γ, β [B, C] per sample: y[b, t, :] = γ_b·LN(x[b, t, :]) + β_b (LN without affine).
                The caller folds a model's (1 + γ) into γ.

Statistics are float32 whatever the storage dtype. adain1d rows are long (8,000-50,000 frames at the
vocoder rates) and some channels are nearly constant, where E[x²] − E[x]² in float32 is pure rounding
noise that goes negative (rsqrt → NaN for the whole utterance). The kernel therefore (1) subtracts the
row's first sample before summing, so a near-constant row sums small, exactly representable differences,
and (2) accumulates chunk by chunk with Chan's pairwise update of (count, mean, M2), each chunk's M2
computed around its own mean: no cancellation anywhere, one read of x for the statistics and one for
the output. The variance is still clamped at 0 as the contract demands.

Launch invariants: inputs contiguous; adain1d: one program per row, looping over L in BLOCK chunks
(the row is read twice; the second read mostly hits L2). layer_norm: ROWS rows of C ≤ MAX_C channels
per program, the whole row in registers (one read, one write).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import block_size, randn
from tilewave.reference.norm import ada_layer_norm_torch, adain1d_torch, per_item

ADAIN_BLOCK = 8192   # 32 elements (eight 16-byte loads in fp32) per thread at 8 warps: enough bytes in
                     # flight per chunk for one program to stream a 48,000-frame row near its share of HBM
MAX_C = 16384        # layer_norm keeps one whole row in registers
LN_TILE = 4096       # elements per layer_norm program (ROWS x BLOCK_C)
_DTYPES = ("fp32", "fp16", "bf16")


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _adain_row(x_row, y_row, g_ptr, b_ptr, n, eps, BLOCK: tl.constexpr):
    """Normalise x_row[:n] into y_row[:n] with (g, b) at g_ptr / b_ptr."""
    shift = tl.load(x_row).to(tl.float32)
    count = shift * 0.0
    mean = shift * 0.0
    m2 = shift * 0.0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        d = tl.where(mask, tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32) - shift, 0.0)
        n_chunk = tl.minimum(n - start, BLOCK).to(tl.float32)
        mean_chunk = tl.sum(d, axis=0) / n_chunk
        dc = tl.where(mask, d - mean_chunk, 0.0)
        m2_chunk = tl.sum(dc * dc, axis=0)
        total = count + n_chunk
        delta = mean_chunk - mean
        mean = mean + delta * (n_chunk / total)
        m2 = m2 + m2_chunk + delta * delta * (count * (n_chunk / total))
        count = total
    var = tl.maximum(m2 / count, 0.0)
    scale = tl.load(g_ptr).to(tl.float32) * tl.rsqrt(var + eps)
    beta = tl.load(b_ptr).to(tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        # masked lanes would be (0 - shift) * scale: out of range for float16 stores
        y = tl.where(mask, ((x - shift) - mean) * scale + beta, 0.0)
        tl.store(y_row + offs, y.to(y_row.dtype.element_ty), mask=mask)


@triton.jit
def _adain1d_kernel(x_ptr, g_ptr, b_ptr, y_ptr, L, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    _adain_row(x_ptr + row * L, y_ptr + row * L, g_ptr + row, b_ptr + row, L, eps, BLOCK)


@triton.jit
def _adain1d_lengths_kernel(x_ptr, g_ptr, b_ptr, y_ptr, len_ptr, L, C, eps, BLOCK: tl.constexpr):
    # rows of a padded batch [B, C, L]: row r = (b, c) normalises its first lengths[b] frames exactly as the
    # unmasked kernel normalises a row of that length (same chunks, same order: bit-identical to a solo
    # run), and writes zeros past them
    row = tl.program_id(0).to(tl.int64)
    n = tl.minimum(tl.maximum(tl.load(len_ptr + row // C), 0), L).to(tl.int32)
    y_row = y_ptr + row * L
    _adain_row(x_ptr + row * L, y_row, g_ptr + row, b_ptr + row, n, eps, BLOCK)
    for start in range(n, L, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(y_row + offs, tl.zeros((BLOCK,), dtype=y_ptr.dtype.element_ty), mask=offs < L)


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


def adain1d(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5,
            out: torch.Tensor | None = None, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """lengths [B] (x [B, C, L]): item b's statistics over its first lengths[b] frames, zeros past them; one
    launch, no host read of the lengths, each row bit-identical to the unmasked kernel on that many frames."""
    _require_contiguous("adain1d", x=x, gamma=gamma, beta=beta)
    L = x.shape[-1]
    if lengths is not None and (x.dim() != 3 or lengths.shape != (x.shape[0],)):
        raise ValueError(f"adain1d: lengths must be [B] for x [B, C, L], got {tuple(lengths.shape)} for x "
                         f"{tuple(x.shape)}")
    rows = x.numel() // max(L, 1)
    if gamma.numel() != rows or beta.numel() != rows:
        raise ValueError(f"adain1d: gamma and beta need one value per (batch, channel) row ({rows} for x "
                         f"{tuple(x.shape)}), got {tuple(gamma.shape)} and {tuple(beta.shape)}")
    out = torch.empty_like(x) if out is None else out
    if rows and L:
        # one block size for every L: short rows waste masked lanes of one chunk, which costs nothing
        # measurable in a memory-bound kernel and keeps a single compiled variant per dtype
        if lengths is None:
            _adain1d_kernel[(rows,)](x, gamma, beta, out, L, float(eps), BLOCK=ADAIN_BLOCK, num_warps=8)
        else:
            _adain1d_lengths_kernel[(rows,)](x, gamma, beta, out, lengths.to(device=x.device, dtype=torch.int64),
                                             L, x.shape[1], float(eps), BLOCK=ADAIN_BLOCK, num_warps=8)
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
def adain1d_oracle(x, gamma, beta, eps=1e-5, lengths=None):
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
    return inputs


def _adain_bytes(p, itemsize):
    B, C, L = p["shape"]
    return itemsize * (2 * B * C * L + 2 * B * C)


register(Kernel(
    arithmetic="float32",  # 16-bit storage is computed in float32
    name="adain1d", family="norm", used_by=("kokoro",),
    doc="per row r over time: gamma_r (x - mu_r) rsqrt(max(var_r, 0) + eps) + beta_r, biased variance",
    make_inputs=_adain_inputs, alloc_out=lambda i: torch.empty_like(i["x"]), launch=adain1d,
    oracle=adain1d_oracle, peer=adain1d_torch, tol_kind="reduction",
    cases=[Case({"shape": (2, 3, 77)}),
           Case({"shape": (1, 5, 2500)}),
           Case({"shape": (1, 4, 7900), "near_constant": True}),
           Case({"shape": (2, 1024, 801)}, devices=("cuda",)),
           Case({"shape": (1, 64, 48001), "near_constant": True}, devices=("cuda",)),
           Case({"shape": (1, 128, 48000)}, devices=("cuda",)),
           Case({"shape": (3, 4, 300), "lengths": True}),
           Case({"shape": (4, 512, 20000), "lengths": True}, devices=("cuda",))],
    # Kokoro decoder / generator AdaIN blocks at 10 s of speech, and one >= 256 MB input.
    bench=[BenchShape(label, {"shape": shape}, flops=lambda p: 7 * math.prod(p["shape"]), bytes=_adain_bytes)
           for label, shape in (("Kokoro decoder AdaIN [1, 1024, 800]", (1, 1024, 800)),
                                ("Kokoro decoder AdaIN x2 [1, 512, 1600]", (1, 512, 1600)),
                                ("Kokoro generator AdaIN 1 [1, 256, 8000]", (1, 256, 8000)),
                                ("Kokoro generator AdaIN 2 [1, 128, 48000]", (1, 128, 48000)),
                                ("large [8, 512, 16384]", (8, 512, 16384)))],
    variants=lambda: [AotVariant(f"_adain1d_kernel[{dt}]", _adain1d_kernel,
                                 {"x_ptr": f"*{dt}", "g_ptr": f"*{dt}", "b_ptr": f"*{dt}", "y_ptr": f"*{dt}",
                                  "L": "i32", "eps": "fp32"}, {"BLOCK": ADAIN_BLOCK}, num_warps=8)
                      for dt in _DTYPES]
                     + [AotVariant(f"_adain1d_lengths_kernel[{dt}]", _adain1d_lengths_kernel,
                                   {"x_ptr": f"*{dt}", "g_ptr": f"*{dt}", "b_ptr": f"*{dt}", "y_ptr": f"*{dt}",
                                    "len_ptr": "*i64", "L": "i32", "C": "i32", "eps": "fp32"},
                                   {"BLOCK": ADAIN_BLOCK}, num_warps=8)
                        for dt in _DTYPES],
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
