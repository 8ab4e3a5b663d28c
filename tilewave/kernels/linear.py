"""Linear layers with their epilogue: one tiled matrix product, the bias, an activation and a residual in one pass.

linear   y[m, n] = act(Σ_k x[m, k]·w[n, k] + b[n]) + r[m, n]       x [M, K], w [N, K] (nn.Linear's layout),
                                                                  b [N] optional, r [M, N] optional
         act: 'none' | 'gelu_tanh' (0.5·z·(1 + tanh(√(2/π)·(z + 0.044715·z³))), BERT/ALBERT's "gelu_new")

Why a kernel of our own for what cuBLAS does: float32 products on the tensor cores at float32-class error. A
float32 model's stages that decide something discrete (Kokoro's ALBERT and duration predictor decide the
durations) may not run on one TF32 product (precision.float32_class), so on a GPU they ran cuBLAS's FMA sgemm —
ALBERT's twelve layers of [T, 768] products, the largest sgemm share of a Kokoro forward. Here 'tf32x3' is tl.dot's three TF32 MMAs on the
operands' high and low parts (the error of float32 products), and the bias, the activation and the residual
are applied to the float32 accumulator before the one store: a BERT layer is 7 launches, not 12.
Kokoro's ALBERT runs on it where KokoroModel.fuse_albert says so (models/kokoro/modules.py, Albert).
'ieee' (exact FMAs) and 16-bit operands run too; ops.linear sends exact float32 to cuBLAS, whose sgemm is faster
than a Triton FMA dot.

Layout and launch: x and w have a contiguous last axis (K); r and y are [M, N] with a contiguous last axis (their
row strides are arguments: a strided view of rows works). Grid (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)); each
program walks K in BLOCK_K steps, w's [BLOCK_N, BLOCK_K] tile transposed in the dot (K-major for both operands,
what the tensor cores read). Accumulation and the epilogue are float32 whatever the storage dtype.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from tilewave.kernels._common import randn, tanh
from tilewave.reference.linear import linear_torch
from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register

ACTS = ("none", "gelu_tanh")
PRECISIONS = ("ieee", "tf32x3", "tf32")  # of float32 operands; 16-bit operands multiply on the tensor cores
SIXTEEN_BIT_DOT = "tf32"  # tl.dot's input_precision for 16-bit operands (ignored there; it names the compiled form)
BLOCK_N, BLOCK_K = 64, 32
BLOCK_M_CHOICES = (64, 32, 16)  # largest first
FILL_PROGRAMS = 128  # the plan takes the largest BLOCK_M that still gives this many programs (an H200 has 132 SMs)
NUM_WARPS, NUM_STAGES = 4, 3


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, r_ptr, y_ptr, M, N, K, sxm, swn, srm, sym,
                   HAS_BIAS: tl.constexpr, ACT: tl.constexpr, HAS_RES: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    # grid: (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)); ACT 0 none, 1 gelu_tanh
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * sxm
    w_rows = w_ptr + cols.to(tl.int64)[:, None] * swn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + ks
        k_ok = k < K
        x = tl.load(x_rows + k[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        w = tl.load(w_rows + k[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0)
        acc = tl.dot(x, tl.trans(w), acc, input_precision=PRECISION)
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    if ACT == 1:
        acc = 0.5 * acc * (1.0 + tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)))
    mask = row_ok[:, None] & col_ok[None, :]
    if HAS_RES:
        acc += tl.load(r_ptr + rows.to(tl.int64)[:, None] * srm + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + rows.to(tl.int64)[:, None] * sym + cols[None, :], acc.to(y_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------------------
# plan and launcher (Triton path; tilewave.ops.linear decides when to call it)
# ---------------------------------------------------------------------------------------------------
def plan_linear(M: int, N: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): the largest BLOCK_M whose grid still has FILL_PROGRAMS
    programs (a [384, 768] product: 32 rows, 144 programs), else the smallest: short inputs are latency-bound,
    and more programs share the K walk."""
    for bm in BLOCK_M_CHOICES:
        if triton.cdiv(M, bm) * triton.cdiv(N, BLOCK_N) >= FILL_PROGRAMS:
            break
    return bm, BLOCK_N, BLOCK_K, NUM_WARPS, NUM_STAGES


def _rows(t: torch.Tensor, name: str) -> torch.Tensor:
    """t as [rows, last] without a copy where its leading axes merge; the last axis must be contiguous."""
    if t.stride(-1) != 1:
        raise ValueError(f"linear: {name}'s last axis must be contiguous, got strides {t.stride()}")
    return t.reshape(-1, t.shape[-1])


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, act: str = "none",
           residual: torch.Tensor | None = None, precision: str = "ieee", out: torch.Tensor | None = None,
           plan: tuple[int, int, int, int, int] | None = None):
    """act(x @ weight.T + bias) + residual for x [..., K], weight [N, K], residual [..., N] -> [..., N].
    plan: plan_linear's tuple, to time other tiles (benchmarks/tune_linear.py)."""
    if act not in ACTS:
        raise ValueError(f"linear: act must be one of {ACTS}, got {act!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"linear: precision must be one of {PRECISIONS}, got {precision!r}")
    N, K = weight.shape
    if x.shape[-1] != K:
        raise ValueError(f"linear: x has {x.shape[-1]} features, weight {tuple(weight.shape)} takes {K}")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != x.dtype):
        raise ValueError(f"linear: x, weight and bias must share a dtype, got {x.dtype}, {weight.dtype}"
                         f"{'' if bias is None else ', ' + str(bias.dtype)}")
    lead = x.shape[:-1]
    x2 = _rows(x, "x")
    w = weight if weight.stride(-1) == 1 else weight.contiguous()
    out = x.new_empty(*lead, N) if out is None else out
    y2 = _rows(out, "out")
    r2 = None
    if residual is not None:
        if residual.shape != out.shape:
            raise ValueError(f"linear: residual {tuple(residual.shape)} must have the output's shape {tuple(out.shape)}")
        r2 = _rows(residual, "residual")
    M = x2.shape[0]
    if M == 0 or N == 0:
        return out
    if K == 0:
        raise ValueError("linear: K = 0 (an empty product) is not a layer")
    bm, bn, bk, warps, stages = plan or plan_linear(M, N)
    dot = precision if x.dtype == torch.float32 else SIXTEEN_BIT_DOT
    _linear_kernel[(triton.cdiv(M, bm), triton.cdiv(N, bn))](
        x2, w, w if bias is None else bias, y2 if r2 is None else r2, y2, M, N, K, x2.stride(0), w.stride(0),
        0 if r2 is None else r2.stride(0), y2.stride(0), HAS_BIAS=bias is not None, ACT=ACTS.index(act),
        HAS_RES=r2 is not None, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PRECISION=dot, num_warps=warps,
        num_stages=stages)
    return out


# ---------------------------------------------------------------------------------------------------
# the float64 oracle (the PyTorch peer, op by op: tilewave/reference/linear.py)
# ---------------------------------------------------------------------------------------------------
def linear_oracle(x, weight, bias=None, act="none", residual=None, precision="ieee"):
    f64 = lambda t: None if t is None else t.double()  # noqa: E731
    return linear_torch(f64(x), f64(weight), f64(bias), act, f64(residual))


# ---------------------------------------------------------------------------------------------------
# registration: tests (small shapes on the interpreter, Kokoro's shapes on the GPU), benches, compiled forms
# ---------------------------------------------------------------------------------------------------
def _inputs(p, dtype, device, gen):
    M, N, K = p["M"], p["N"], p["K"]
    # weights at nn.Linear's init scale (1/sqrt(K)): outputs O(1), where GELU's curve matters
    inputs = {"x": randn((M, K), dtype, device, gen), "weight": randn((N, K), dtype, device, gen, scale=K ** -0.5),
              "bias": randn((N,), dtype, device, gen, scale=0.5) if p.get("bias", True) else None,
              "act": p.get("act", "none"),
              "residual": randn((M, N), dtype, device, gen) if p.get("residual") else None,
              "precision": p.get("precision", "ieee")}
    return inputs


def _flops(p):
    return 2 * p["M"] * p["N"] * p["K"]


def _bytes(p, itemsize):
    return itemsize * (p["M"] * p["K"] + p["N"] * p["K"] + p["M"] * p["N"] * (2 if p.get("residual") else 1))


def _case(M, N, K, devices=("cpu", "cuda"), **extra):
    # the interpreter's bfloat16 tl.dot gives garbage (../shared/notes): bfloat16 in the GPU cases only
    return Case({"M": M, "N": N, "K": K, **extra}, devices, None if devices == ("cuda",) else _INTERPRETABLE)


_FP32 = ("float32",)
_INTERPRETABLE = ("float32", "float16")
# ALBERT's layer at 383 tokens (padded to 384, as a graphed single runs it) and at 77 (96)
_ALBERT = [("QKV", 2304, 768, {}), ("attention output + residual", 768, 768, {"residual": True}),
           ("FFN + GELU", 2048, 768, {"act": "gelu_tanh"}), ("FFN output + residual", 768, 2048, {"residual": True})]


def _bench():
    out = []
    for T in (384, 96):
        for what, N, K, extra in _ALBERT:
            params = {"M": T, "N": N, "K": K, **extra}
            out.append(BenchShape(f"Kokoro ALBERT {what} [{T}, {K}] -> {N}, fp32 tf32x3",
                                  {**params, "precision": "tf32x3"}, _flops, _bytes, dtypes=_FP32))
            if T == 384:
                out.append(BenchShape(f"Kokoro ALBERT {what} [{T}, {K}] -> {N}", params, _flops, _bytes,
                                      dtypes=("float32", "bfloat16")))
    return out


def _variants():
    """Kokoro's forms (float32 'tf32x3': every row block and epilogue ALBERT's layer meets), one plain form of
    each other mode and dtype."""
    forms = [("fp32", "tf32x3", bm, act, res) for bm in BLOCK_M_CHOICES for act, res in ((0, False), (1, False),
                                                                                       (0, True))]
    forms += [(dt, dot, BLOCK_M_CHOICES[0], 0, False) for dt, dot in (("fp32", "ieee"), ("fp32", "tf32"),
                                                                     ("bf16", SIXTEEN_BIT_DOT), ("fp16", SIXTEEN_BIT_DOT))]
    out = []
    for dt, dot, bm, act, has_res in forms:
        sig = {"x_ptr": f"*{dt}", "w_ptr": f"*{dt}", "b_ptr": f"*{dt}", "r_ptr": f"*{dt}", "y_ptr": f"*{dt}",
               "M": "i32", "N": "i32", "K": "i32", "sxm": "i32", "swn": "i32", "srm": "i32", "sym": "i32"}
        out.append(AotVariant(
            f"_linear_kernel[{dt},{dot},bm={bm},act={ACTS[act]},res={has_res}]", _linear_kernel, sig,
            {"HAS_BIAS": True, "ACT": act, "HAS_RES": has_res, "BLOCK_M": bm, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K,
             "PRECISION": dot}, num_warps=NUM_WARPS, num_stages=NUM_STAGES, expect_mma=dot != "ieee",
            aligned_ints=("N", "K", "sxm", "swn", "srm", "sym")))
    return out


register(Kernel(
    name="linear", family="linear", used_by=(),
    doc="y = act(x w^T + b) + r: the product, bias, GELU (tanh form) and residual in one pass",
    make_inputs=_inputs, alloc_out=lambda i: i["x"].new_empty(i["x"].shape[0], i["weight"].shape[0]),
    launch=linear, oracle=linear_oracle, peer=linear_torch, tol_kind="reduction",
    cases=[_case(5, 24, 40),
           _case(33, 70, 48, act="gelu_tanh"),
           _case(20, 64, 96, residual=True, bias=False),
           _case(17, 40, 33, act="gelu_tanh", residual=True, precision="tf32x3"),
           _case(40, 48, 64, residual=True, precision="tf32"),
           _case(384, 2304, 768, devices=("cuda",), precision="tf32x3"),
           _case(96, 768, 2048, devices=("cuda",), residual=True, precision="tf32x3"),
           _case(96, 2048, 768, devices=("cuda",), act="gelu_tanh", precision="tf32x3"),
           _case(383, 768, 768, devices=("cuda",), residual=True),
           _case(1000, 130, 200, devices=("cuda",), act="gelu_tanh", residual=True, precision="tf32")],
    bench=_bench(), variants=_variants,
))
