"""LSTM over a batch of sequences of different lengths, every step's recurrent product one matrix product.

lstm_batched  x [B, T, I]; w_ih [D, 4H, I], w_hh [D, 4H, H], b_ih, b_hh [D, 4H]; optional lengths [B]
              -> out [B, T, D·H]: the same function as kernels/rnn.py's `lstm` (gate rows i, f, g, o;
                  g_t = W_ih x_t + b_ih + b_hh + W_hh h_{t-1};  c_t = σ(f)⊙c_{t-1} + σ(i)⊙tanh(g);
                  h_t = σ(o)⊙tanh(c_t);  h_{-1} = c_{-1} = 0), D = 1 forward or 2 bidirectional;
              steps t >= lengths[b] leave item b's state untouched and write zeros, so its backward
              direction starts at t = lengths[b] - 1 from the zero state (pack_padded_sequence semantics).

Why a second LSTM kernel
------------------------
rnn.py's resident kernel computes h_{t-1} W_hhᵀ as a multiply-reduce per batch row block (CUDA-core FMAs,
BLOCK_B <= 8 rows at a time), so its step cost grows linearly in B. Here each
program keeps its slice of W_hh — the four gates' columns for UNITS hidden units, one [H, 4·UNITS] tile —
on chip for the whole sequence, and a step is, per block of BLOCK_B items, one tl.dot
[BLOCK_B, H] x [H, 4·UNITS] (tensor cores at 'tf32x3' / 'tf32', exact FMAs at 'ieee'): all items' recurrent
products in one instruction stream, so the step cost should stay nearly flat in B (blocks of BLOCK_B = 16
items, looped inside the step). At H = 256, UNITS = 4: 64 programs per direction, a 16 K-element slice each.
The exact FMA dot is what a step waits for, and each thread's dot grows with the units its program owns, so
the plan takes the fewest units per program the SMs allow; one TF32 MMA is faster than either and the same at
4 or 8 units. The float32-class mode 'tf32x3' is three TF32 MMAs on high and low parts (_dot_tf32x3), what
ops.rnn runs outside 'ieee'. Step times by batch, units and mode (benchmarks/diag/batch_gpu.py --lstm-only):
benchmarks/RESULTS.md.

Layout and synchronisation are rnn.py's: the input projection of every step and direction is one GEMM
before the recurrence (xp [B, T, D·4H]); NSPLIT programs per direction each own UNITS units; `out` doubles
as the h exchange buffer (step t reads row t∓1, which padded steps filled with zeros — the backward zero
state); the programs of one direction meet after each step at rnn.py's atomic-counter barrier, so all
D·NSPLIT programs must be co-resident (the launcher checks the SM count). Under TRITON_INTERPRET programs
run one at a time, so there NSPLIT = 1 (one program owns every unit of its direction).
tl.dot needs M, N, K >= 16 on the GPU: BLOCK_B >= 16, 4·UNITS >= 16, H padded to a power of two >= 16.
Rows (BLOCK_B = 1, ROWS_MAX_B): for a few items each item's row is a multiply-reduce of h against the held slice
(tl.sum over K in exact float32 FMAs, whatever the mode asked: never less exact than its dot) instead of a dot over
a 16-row tile that is 15/16 padding at batch 1: at batch 1 the row step beats every dot and cuDNN, but the rows
cost about a step's time again per further item, so past a few items the dot wins (ROWS_MAX_B).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels.rnn import (_cell_update, _check_lstm_args, _direction_barrier, _interpreting, _lstm_bytes,
                                  _lstm_flops, _lstm_inputs, lstm_oracle, lstm_torch)

RESIDENT_WEIGHTS = 16384  # float32 W_hh elements per program (4 gates x H x UNITS): 64 KB, as in rnn.py
MIN_DOT = 16              # tl.dot's smallest M / N / K on the GPU
# sm_90 compiles (tilewave build, 4 warps, 1 stage, H = 256, BLOCK_B = 16, in the forms the runtime launches:
# H a multiple of 16, B = 1 a constant at batch 1): 'ieee' and 'tf32' at 4 and 8 units without spills; tf32x3
# spills with the whole slice held (Triton's own tf32x3 and the same by hand alike), so tf32x3 is three TF32 dots
# by hand over 64-wide chunks of K with W_hh re-read each step (_dot_tf32x3), the chunks unrolled: no spills, and
# a shorter step than in a loop. BLOCK_B = 64 spills in 'ieee', so larger B loops blocks of 16. Register counts:
# benchmarks/RESULTS.md.
MAX_BLOCK_B = 16
# the most items the plan steps a row at a time (module doc), per mode: up to where rows (each further item adds
# about a row step's time) beat the mode's dot (timed at Kokoro's 383 steps by benchmarks/diag/lstm_gpu.py)
ROWS_MAX_B = {"ieee": 5, "tf32x3": 3, "tf32": 1}
NUM_WARPS, NUM_STAGES = 4, 1  # one stage: the step loop carries a barrier, nothing to prefetch across it
MAX_HIDDEN = 256          # the width whose sm_90 compile is checked (Kokoro's); wider runs on kernels.rnn.lstm
# the float32-product modes (tilewave.precision.MODES) this kernel compiles without spills
PRECISIONS = ("ieee", "tf32x3", "tf32")


@triton.jit
def _lstm_batched_kernel(xp_ptr, whh_ptr, out_ptr, c_ptr, len_ptr, sync_ptr, B, T, H,
                         HAS_LEN: tl.constexpr, NSPLIT: tl.constexpr, UNITS: tl.constexpr,
                         BLOCK_K: tl.constexpr, BLOCK_B: tl.constexpr, PRECISION: tl.constexpr):
    # grid: (D * NSPLIT,); program = (direction d, hidden units [j·UNITS, (j+1)·UNITS)).
    pid = tl.program_id(0)
    d = pid // NSPLIT
    D = tl.num_programs(0) // NSPLIT
    units = (pid % NSPLIT) * UNITS + tl.arange(0, UNITS)
    u_mask = units < H
    # The four gates' columns of W_hhᵀ for these units as one [BLOCK_K, 4·UNITS] tile (column j: gate
    # j // UNITS, unit j % UNITS), so a step is one dot per block of items with N = 4·UNITS >= 16.
    j = tl.arange(0, 4 * UNITS)
    unit_of_col = (pid % NSPLIT) * UNITS + j % UNITS
    row_of_col = (j // UNITS) * H + unit_of_col  # the W_hh row (and xp column) behind column j
    col_mask = unit_of_col < H
    k = tl.arange(0, BLOCK_K)
    k_mask = k < H
    w_d = whh_ptr + d.to(tl.int64) * 4 * H * H
    w_offs = row_of_col[None, :].to(tl.int64) * H + k[:, None]
    w_mask = k_mask[:, None] & col_mask[None, :]
    if PRECISION != "tf32x3":
        w = tl.load(w_d + w_offs, mask=w_mask, other=0.0)
    poison = 0.0  # NaN after a barrier timeout, so every later output says so
    for s in range(0, T):
        t = tl.where(d == 1, T - 1 - s, s)
        t_prev = tl.where(d == 1, t + 1, t - 1)
        for b0 in range(0, B, BLOCK_B):
            b = b0 + tl.arange(0, BLOCK_B)
            b_mask = b < B
            bt = b.to(tl.int64) * T
            h_rows = out_ptr + ((bt + t_prev) * (H * D) + d * H)[:, None]  # h_{t-1} of the block's items
            h_mask = (b_mask & (s > 0))[:, None]
            if PRECISION != "tf32x3":
                h = tl.load(h_rows + k[None, :], mask=h_mask & k_mask[None, :], other=0.0, cache_modifier=".cg")
            xp = tl.load(xp_ptr + ((bt + t) * (4 * H * D) + d * 4 * H)[:, None] + row_of_col[None, :],
                         mask=b_mask[:, None] & col_mask[None, :], other=0.0)
            # xp is added after the dot, not as its accumulator: as the accumulator it is converted to the dot's
            # layout between the loads of the dot's two operands, through shared memory behind a barrier, and
            # where xp loads in another layout (H known a multiple of 16: every launch at Kokoro's shapes) that
            # barrier holds the 512 h values each thread has loaded for its FMAs live at once: ptxas gave that
            # form 32 registers and spills, and its exact step several times as long (benchmarks/RESULTS.md).
            if PRECISION == "tf32x3":
                gates = _dot_tf32x3(h_rows, h_mask, w_d + row_of_col[None, :].to(tl.int64) * H, col_mask[None, :], H,
                                    BLOCK_K, BLOCK_B, 4 * UNITS) + poison + xp
            elif BLOCK_B < 16:  # a row at a time (launched with 'ieee'): a multiply-reduce, no 16-row dot tile
                gates = tl.sum(h[:, :, None] * w[None, :, :], axis=1) + poison + xp
            else:
                gates = tl.dot(h, w, input_precision=PRECISION) + poison + xp
            # [BB, 4U] -> [BB, U, 2, 2] with element [b, u, p, q] = gate 2p + q, then split q and p
            gates = tl.reshape(tl.permute(tl.reshape(gates, (BLOCK_B, 4, UNITS)), (0, 2, 1)), (BLOCK_B, UNITS, 2, 2))
            g_ig, g_fo = tl.split(gates)
            gi, gg = tl.split(g_ig)
            gf, go = tl.split(g_fo)
            m2 = b_mask[:, None] & u_mask[None, :]
            c_offs = (d * B + b.to(tl.int64))[:, None] * H + units[None, :]
            c = tl.load(c_ptr + c_offs, mask=m2 & (s > 0), other=0.0)
            h_new, c_new = _cell_update(gi, gf, gg, go, c)
            active = b_mask
            if HAS_LEN:
                active = active & (t < tl.load(len_ptr + b, mask=b_mask, other=0))
            tl.store(c_ptr + c_offs, tl.where(active[:, None], c_new, c), mask=m2)
            tl.store(out_ptr + ((bt + t) * (H * D) + d * H)[:, None] + units[None, :],
                     tl.where(active[:, None], h_new, 0.0), mask=m2)
        if NSPLIT > 1:
            if s + 1 < T:  # nobody reads h after the last step
                if not _direction_barrier(sync_ptr + d, (s + 1) * NSPLIT):
                    poison = float("nan")
        else:
            tl.debug_barrier()


@triton.jit
def _dot_tf32x3(h_rows, h_mask, w_cols, w_mask, H, BLOCK_K: tl.constexpr, BLOCK_B: tl.constexpr, N: tl.constexpr):
    """[BLOCK_B, H] h x [H, N] W_hh slice as three TF32 MMAs on high and low parts (float32-class error), over K in
    chunks of KC: both operands' two parts held whole (and Triton's own tf32x3) take 255 registers and spill
    (sm_90 build). W_hh's slice is read again each step, from L1 (16 KB a program), not held across the loop."""
    KC: tl.constexpr = 64 if BLOCK_K > 64 else BLOCK_K
    acc = tl.zeros((BLOCK_B, N), dtype=tl.float32)
    for c in tl.static_range(BLOCK_K // KC):  # unrolled: every chunk's h load in flight at once
        k = c * KC + tl.arange(0, KC)
        k_mask = k < H
        h = tl.load(h_rows + k[None, :], mask=h_mask & k_mask[None, :], other=0.0, cache_modifier=".cg")
        w = tl.load(w_cols + k[:, None], mask=w_mask & k_mask[:, None], other=0.0)
        h_hi, w_hi = _tf32_high(h), _tf32_high(w)
        acc = tl.dot(h_hi, w - w_hi, acc, input_precision="tf32")
        acc = tl.dot(h - h_hi, w_hi, acc, input_precision="tf32")
        acc = tl.dot(h_hi, w_hi, acc, input_precision="tf32")
    return acc


@triton.jit
def _tf32_high(x):
    """x with its low 13 mantissa bits cleared: exactly a TF32 value; x - it is exact in float32."""
    return (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)


def plan_lstm_batched(B: int, H: int, D: int, device: torch.device, precision: str = "ieee"
                      ) -> tuple[int, int, int, int]:
    """(NSPLIT, UNITS, BLOCK_K, BLOCK_B): W_hh split over as many co-resident programs as the SMs allow (the
    fewer units per program, the shorter each thread's exact dot and the step: benchmarks/RESULTS.md), items in
    blocks of BLOCK_B, or a row at a time (BLOCK_B = 1) up to ROWS_MAX_B items."""
    block_k = max(MIN_DOT, triton.next_power_of_2(H))
    block_b = 1 if B <= ROWS_MAX_B[precision] else min(MAX_BLOCK_B, max(MIN_DOT, triton.next_power_of_2(B)))
    if _interpreting():
        return 1, block_k, block_k, block_b
    n_sm = torch.cuda.get_device_properties(device).multi_processor_count
    units = MIN_DOT // 4
    while D * triton.cdiv(H, units) > n_sm and units < block_k:
        units *= 2
    nsplit = triton.cdiv(H, units)
    if D * nsplit > n_sm or 4 * units * block_k > RESIDENT_WEIGHTS:
        raise ValueError(f"lstm_batched: H={H} needs {D}x{nsplit} co-resident programs of {units} units; "
                         f"use kernels.rnn.lstm for this width")
    return nsplit, units, block_k, block_b


def lstm_batched(x: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor, b_ih: torch.Tensor, b_hh: torch.Tensor,
                 lengths: torch.Tensor | None = None, precision: str = "ieee", reverse: bool = False,
                 path=None, out: torch.Tensor | None = None, plan: tuple[int, int, int, int] | None = None
                 ) -> torch.Tensor:
    """Whole-sequence LSTM for a batch (see the module doc); weights stacked per direction [D, ...].
    precision: how h W_hhᵀ meets the tensor cores ('ieee' exact FMAs, 'tf32x3' three TF32 MMAs, 'tf32' one); a
    plan stepping rows (BLOCK_B = 1) runs exact FMAs in every mode.
    reverse and path exist for the shared test inputs of kernels/rnn.py: only reverse=False is taken.
    plan: (NSPLIT, UNITS, BLOCK_K, BLOCK_B) instead of plan_lstm_batched's (tests: a split plan at T = 1 runs in
    the interpreter, whose programs run one at a time and could not meet at a barrier)."""
    _check_lstm_args(x, w_ih, w_hh, b_ih, b_hh, lengths, reverse)
    if reverse:
        raise ValueError("lstm_batched: a backward-only LSTM is kernels.rnn.lstm(reverse=True); this kernel runs "
                         "forward (D=1) or bidirectional (D=2)")
    if precision not in PRECISIONS:
        raise ValueError(f"lstm_batched: precision must be one of {PRECISIONS}, "
                         f"got {precision!r}")
    B, T, I = x.shape
    D, H4, _ = w_ih.shape
    H = H4 // 4
    out = x.new_empty(B, T, D * H) if out is None else out
    if B == 0 or T == 0 or H == 0:
        return out
    xp = torch.addmm((b_ih + b_hh).reshape(D * H4), x.reshape(B * T, I), w_ih.reshape(D * H4, I).t())
    nsplit, units, block_k, block_b = plan or plan_lstm_batched(B, H, D, x.device, precision)
    if nsplit > 1 and T > 1 and _interpreting():
        raise ValueError(f"lstm_batched: a plan of {nsplit} programs per direction would wait forever at the first "
                         "barrier in the interpreter; use NSPLIT = 1 or T = 1")
    c = x.new_empty(D, B, H)
    lens = x if lengths is None else lengths.to(device=x.device, dtype=torch.int64)
    sync = torch.zeros(D, dtype=torch.int32, device=x.device)
    _lstm_batched_kernel[(D * nsplit,)](
        xp, w_hh.contiguous(), out, c, lens, sync, B, T, H, HAS_LEN=lengths is not None, NSPLIT=nsplit,
        UNITS=units, BLOCK_K=block_k, BLOCK_B=block_b, PRECISION="ieee" if block_b < MIN_DOT else precision,
        num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return out


# ---------------------------------------------------------------------------------------------------
# registration (inputs, oracle, peer and work counts shared with kernels/rnn.py's lstm)
# ---------------------------------------------------------------------------------------------------
def _variants():
    out = []
    # Kokoro's BiLSTMs, H = 256: 64 programs of 4 units per direction (128 of an H200's 132 SMs), or 32 of 8
    # units where fewer than 128 SMs are there (an A100's 108, an H100 PCIe's 114)
    for units in (4, 8):
        for precision, block_b in [(p, MAX_BLOCK_B) for p in PRECISIONS] + [("ieee", 1)]:
            for has_len in (False, True):
                sig = {"xp_ptr": "*fp32", "whh_ptr": "*fp32", "out_ptr": "*fp32", "c_ptr": "*fp32",
                       # without lengths the launcher passes x, which the kernel never reads
                       "len_ptr": "*i64" if has_len else "*fp32", "sync_ptr": "*i32", "B": "i32", "T": "i32",
                       "H": "i32"}
                out.append(AotVariant(
                    f"_lstm_batched_kernel[H<=256,units={units},bb={block_b},{precision},len={has_len}]",
                    _lstm_batched_kernel, sig,
                    {"HAS_LEN": has_len, "NSPLIT": 256 // units, "UNITS": units, "BLOCK_K": 256,
                     "BLOCK_B": block_b, "PRECISION": precision}, num_warps=NUM_WARPS, num_stages=NUM_STAGES,
                    expect_mma=precision != "ieee", aligned_ints=("H",)))
    return out


def _inputs(p, dtype, device, gen):
    return {**_lstm_inputs(p, dtype, device, gen), "precision": p.get("precision", "ieee")}


def _oracle(precision="ieee", **inputs):
    return lstm_oracle(**inputs)


def _case(B, T, I, H, D, devices=("cpu", "cuda"), **extra):
    return Case({"B": B, "T": T, "I": I, "H": H, "D": D, **extra}, devices)


def _bench(B, T, what, precision="ieee"):
    return BenchShape(f"Kokoro BiLSTM 640->2x256, {T} {what}, batch {B}, {precision}",
                      {"B": B, "T": T, "I": 640, "H": 256, "D": 2, "lengths": B > 1, "precision": precision},
                      flops=_lstm_flops, bytes=_lstm_bytes)


register(Kernel(
    name="lstm_batched", family="rnn", used_by=("kokoro",),
    doc="LSTM over a batch of different lengths, each step's recurrent product one tl.dot per gate (D=1 or 2)",
    make_inputs=_inputs, alloc_out=lambda i: i["x"].new_empty(
        i["x"].shape[0], i["x"].shape[1], i["w_ih"].shape[0] * i["w_hh"].shape[2]),
    launch=lstm_batched, oracle=_oracle, peer=lstm_torch, dtypes=("float32",), tol_kind="recurrence",
    cases=[_case(3, 7, 12, 16, 2, lengths=True),
           _case(5, 9, 20, 24, 2, lengths=True),
           _case(2, 6, 8, 16, 1),
           _case(17, 5, 10, 20, 1, lengths=True),
           _case(3, 7, 12, 16, 2, lengths=True, precision="tf32x3"),
           _case(5, 9, 20, 72, 1, lengths=True, precision="tf32x3"),  # H past one 64-wide chunk, not a multiple
           _case(8, 383, 640, 256, 2, devices=("cuda",), lengths=True),
           _case(1, 383, 640, 256, 2, devices=("cuda",), precision="tf32x3"),
           _case(8, 383, 640, 256, 2, devices=("cuda",), lengths=True, precision="tf32x3"),
           _case(64, 383, 640, 256, 2, devices=("cuda",), lengths=True),
           _case(32, 962, 640, 256, 2, devices=("cuda",), lengths=True),
           _case(70, 50, 64, 48, 2, devices=("cuda",), lengths=True)],
    bench=[_bench(B, 383, "tokens") for B in (1, 8, 32, 64)] + [_bench(B, 962, "frames") for B in (1, 64)]
    + [_bench(B, 383, "tokens", "tf32x3") for B in (1, 64)] + [_bench(1, 962, "frames", "tf32x3")],
    variants=_variants,
))
