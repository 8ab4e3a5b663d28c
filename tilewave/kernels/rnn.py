"""LSTM recurrence, PyTorch semantics, float32 only (errors compound over thousands of steps).

lstm       x [B, T, I]; w_ih [D, 4H, I], w_hh [D, 4H, H], b_ih, b_hh [D, 4H]; optional lengths [B]
           -> out [B, T, D·H]. Gate rows in the order i, f, g, o:
               g_t = W_ih x_t + b_ih + b_hh + W_hh h_{t-1}
               c_t = σ(f)⊙c_{t-1} + σ(i)⊙tanh(g),   h_t = σ(o)⊙tanh(c_t),   h_{-1} = c_{-1} = 0
           D = 1: forward (or backward with reverse=True) into out[..., 0:H];
           D = 2: forward into [0, H), backward (t = T-1 … 0) into [H, 2H), both in one launch.
           lengths: steps t >= lengths[b] leave the state untouched and write zeros (pack_padded_sequence,
           then pad), so a backward direction starts at t = lengths[b] - 1 from the zero state.
lstm_cell  one step for a batch: x [B, I], h, c [B, H], w_ih [4H, I], w_hh [4H, H], b_ih, b_hh [4H]
           -> (h', c').

How the sequence runs on the GPU
--------------------------------
The input projection of every timestep and both directions is ONE GEMM before the recurrence
(torch.addmm: x [B·T, I] @ [W_ih fwd; W_ih bwd]^T + (b_ih + b_hh) -> xp [B, T, D·4H]); what remains
per step is h_{t-1} @ W_hh^T, a 4H×H matrix-vector product per batch row, and the cell update. At hidden
256 and batch 1 that is 1 MB of float32 weights per direction for 0.5 MFLOP per step: the step time is
latency, not arithmetic, and the cost to beat is cuDNN's per-step launches.

Path "resident" (the default on the GPU): each direction's 4H gate rows are split over NSPLIT programs;
program j owns hidden units [j·U, (j+1)·U) and keeps the four gates' rows of W_hh for them in registers
for the whole sequence (U·4·H ≤ 16,384 floats: at H = 256, U = 16 and NSPLIT = 16, so a BiLSTM runs on
32 SMs). Each step a program reads the full h_{t-1} of its direction (1 KB, from L2), computes its units'
gates, updates c, writes its slice of h_t straight into `out` (batch rows in blocks of BLOCK_B inside the
step, so a batch costs one barrier per step, not one per row), and then meets the other programs of its
direction at a barrier built from one atomic counter per direction (arrive with a release add, spin on
acquire reads until the count reaches (step + 1)·NSPLIT; the counter only grows, so it never needs a
reset between steps). `out` doubles as the h exchange buffer: step t reads row t∓1 of its own columns,
which the barrier guarantees complete; padded steps wrote zeros there, which is exactly the zero state a
backward direction must start from. h loads use the .cg modifier (L2, never a stale L1 line). All
programs must be co-resident, so the launcher uses this path only when D·NSPLIT ≤ the SM count
(132 on an H200) and the kernel must not share the GPU with a concurrent kernel that holds SMs.
Why not one program per direction streaming W_hh from L2 each step: 1 MB per step through one SM's L2
port costs about what cuDNN's per-step launches take; splitting over 16 SMs leaves a 64 KB register-resident
slice per SM, and the step costs one L2 round trip for h plus the barrier (step times: benchmarks/RESULTS.md).
bf16 weights would halve registers but not the latency, and cost precision over 1,000+ steps.

Path "streaming": one program per (direction, block of batch rows), no barrier; each step it loops over
unit blocks and K chunks of W_hh, read from L2. The launcher takes it when the resident split would need
more programs than SMs (a padded hidden width of 1,024 or more), or when asked (path="streaming").

c lives in a float32 scratch [D, B, H] written and re-read by the same program (its load overlaps the
h load, so it costs no extra latency); every element of `out` is written, so nothing uninitialised is ever
read: h_{-1} and c_{-1} are masked loads of zero. Lengths on the GPU are not range-checked (that would
synchronise); a length outside [0, T] only makes every step active or padded, never an invalid access.

Under TRITON_INTERPRET programs run one after another, so a spin barrier between programs would wait
forever: there the resident path always uses NSPLIT = 1 (one program per direction owns every unit,
the same math with a block-local barrier). The multi-program barrier runs only on a GPU.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register
from tilewave.kernels._common import rand, randn
from tilewave.reference.rnn import lstm_cell_torch, lstm_torch

RESIDENT_WEIGHTS = 16384  # float32 W_hh elements per resident program: 64 KB, 64 registers/thread at 8 warps
PRODUCT_TILE = 8192       # elements of one [BLOCK_B, units, K] multiply-reduce tile (resident path)
STREAM_TILE = 4096        # the same where four W tiles stream through registers per K chunk
STREAM_UNITS = 32
MAX_BLOCK_B = 8
INTERPRET_BLOCK_B = 4
# A legitimate wait is a few µs; ~4 M reads of L2 is seconds. Past that the programs cannot all be
# resident (another kernel holds SMs): the kernel then finishes with NaN outputs instead of hanging.
BARRIER_POLLS = tl.constexpr(1 << 22)


# ---------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------
@triton.jit
def _cell_update(gi, gf, gg, go, c):
    # σ(x) = 1 / (1 + e^-x) and tanh(x) = 2σ(2x) - 1 written out: float32-accurate, saturating cleanly
    # at ±inf, and each nested jit call adds to the CPU interpreter's time on every step.
    c_new = c / (1.0 + tl.exp(-gf)) + (2.0 / (1.0 + tl.exp(-2.0 * gg)) - 1.0) / (1.0 + tl.exp(-gi))
    return (2.0 / (1.0 + tl.exp(-2.0 * c_new)) - 1.0) / (1.0 + tl.exp(-go)), c_new


@triton.jit
def _gates_acc(acc_i, acc_f, acc_g, acc_o, v_ptr, v_rows, v_mask, w_ptr, units, u_mask, H, K,
               KB: tl.constexpr):
    """acc_gate[b, u] += Σ_k v[b, k] · W[gate·H + u, k] for the four gates; W rows have K elements."""
    for k0 in range(0, K, KB):
        k = k0 + tl.arange(0, KB)
        k_mask = k < K
        v = tl.load(v_ptr + v_rows[:, None, None] + k[None, None, :],
                    mask=v_mask[:, None, None] & k_mask[None, None, :], other=0.0)
        w_offs = units[None, :, None].to(tl.int64) * K + k[None, None, :]
        w_mask = u_mask[None, :, None] & k_mask[None, None, :]
        acc_i += tl.sum(v * tl.load(w_ptr + w_offs, mask=w_mask, other=0.0), axis=2)
        acc_f += tl.sum(v * tl.load(w_ptr + H * K + w_offs, mask=w_mask, other=0.0), axis=2)
        acc_g += tl.sum(v * tl.load(w_ptr + 2 * H * K + w_offs, mask=w_mask, other=0.0), axis=2)
        acc_o += tl.sum(v * tl.load(w_ptr + 3 * H * K + w_offs, mask=w_mask, other=0.0), axis=2)
    return acc_i, acc_f, acc_g, acc_o


@triton.jit
def _direction_barrier(counter_ptr, target):
    """Wait until `target` arrivals; False when BARRIER_POLLS reads pass without them (never co-resident)."""
    # Every thread's h stores happen before the CTA barrier; the release add then publishes them
    # (cumulativity), and the acquire reads order this program's next h loads after the others' stores.
    tl.debug_barrier()
    tl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")
    seen = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
    polls = 0
    while (seen < target) & (polls < BARRIER_POLLS):
        seen = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
        polls += 1
    tl.debug_barrier()
    return seen >= target


@triton.jit
def _step_store(xp_ptr, out_ptr, c_ptr, len_ptr, hw_i, hw_f, hw_g, hw_o, b, b_mask, units, u_mask,
                d, t, s, B, T, H, D, HAS_LEN: tl.constexpr):
    """Add the input projection to the recurrent gate sums, update c and write h_t (zeros when padded)."""
    m2 = b_mask[:, None] & u_mask[None, :]
    bt = b.to(tl.int64) * T + t
    xp = xp_ptr + bt[:, None] * (4 * H * D) + d * 4 * H + units[None, :]
    gi = hw_i + tl.load(xp, mask=m2, other=0.0)
    gf = hw_f + tl.load(xp + H, mask=m2, other=0.0)
    gg = hw_g + tl.load(xp + 2 * H, mask=m2, other=0.0)
    go = hw_o + tl.load(xp + 3 * H, mask=m2, other=0.0)
    c_offs = (d * B + b.to(tl.int64))[:, None] * H + units[None, :]
    c = tl.load(c_ptr + c_offs, mask=m2 & (s > 0), other=0.0)
    h_new, c_new = _cell_update(gi, gf, gg, go, c)
    active = b_mask
    if HAS_LEN:
        active = active & (t < tl.load(len_ptr + b, mask=b_mask, other=0))
    tl.store(c_ptr + c_offs, tl.where(active[:, None], c_new, c), mask=m2)
    tl.store(out_ptr + bt[:, None] * (H * D) + d * H + units[None, :], tl.where(active[:, None], h_new, 0.0),
             mask=m2)


@triton.jit
def _lstm_resident_kernel(xp_ptr, whh_ptr, out_ptr, c_ptr, len_ptr, sync_ptr, B, T, H, rev_base,
                          HAS_LEN: tl.constexpr, NSPLIT: tl.constexpr, UNITS: tl.constexpr,
                          BLOCK_K: tl.constexpr, BLOCK_B: tl.constexpr):
    # grid: (D * NSPLIT,); program = (direction, slice of UNITS hidden units), W_hh slice in registers.
    pid = tl.program_id(0)
    d = pid // NSPLIT
    D = tl.num_programs(0) // NSPLIT
    rev = (d + rev_base) % 2
    units = (pid % NSPLIT) * UNITS + tl.arange(0, UNITS)
    u_mask = units < H
    # The four gates' rows for these units as one [4·UNITS, K] tile (row j: gate j // UNITS), so a step
    # is one multiply-reduce (one cross-warp reduction) rather than four.
    j = tl.arange(0, 4 * UNITS)
    unit_of_row = (pid % NSPLIT) * UNITS + j % UNITS
    k = tl.arange(0, BLOCK_K)
    k_mask = k < H
    w_d = whh_ptr + d.to(tl.int64) * 4 * H * H
    w = tl.load(w_d + ((j // UNITS) * H + unit_of_row)[None, :, None] * H + k[None, None, :],
                mask=(unit_of_row < H)[None, :, None] & k_mask[None, None, :], other=0.0)
    poison = 0.0  # becomes NaN after a barrier timeout, so every later output says so
    for s in range(0, T):
        t = tl.where(rev == 1, T - 1 - s, s)
        t_prev = tl.where(rev == 1, t + 1, t - 1)
        for b0 in range(0, B, BLOCK_B):
            b = b0 + tl.arange(0, BLOCK_B)
            b_mask = b < B
            h_rows = (b.to(tl.int64) * T + t_prev) * (H * D) + d * H
            h = tl.load(out_ptr + h_rows[:, None, None] + k[None, None, :],
                        mask=(b_mask & (s > 0))[:, None, None] & k_mask[None, None, :], other=0.0,
                        cache_modifier=".cg")
            # [BB, 4U] -> [BB, U, 2, 2] with element [b, u, p, q] = gate 2p + q, then split q and p
            hw = tl.reshape(tl.permute(tl.reshape(tl.sum(h * w, axis=2) + poison, (BLOCK_B, 4, UNITS)), (0, 2, 1)),
                            (BLOCK_B, UNITS, 2, 2))
            gates_ig, gates_fo = tl.split(hw)
            hw_i, hw_g = tl.split(gates_ig)
            hw_f, hw_o = tl.split(gates_fo)
            _step_store(xp_ptr, out_ptr, c_ptr, len_ptr, hw_i, hw_f, hw_g, hw_o,
                        b, b_mask, units, u_mask, d, t, s, B, T, H, D, HAS_LEN)
        if NSPLIT > 1:
            # nobody reads h after the last step: skipping that barrier also lets a one-step launch with
            # NSPLIT > 1 run in the interpreter, which checks the split's indexing on the CPU
            if s + 1 < T:
                if not _direction_barrier(sync_ptr + d, (s + 1) * NSPLIT):
                    poison = float("nan")
        else:
            tl.debug_barrier()


@triton.jit
def _lstm_streaming_kernel(xp_ptr, whh_ptr, out_ptr, c_ptr, len_ptr, B, T, H, rev_base,
                           HAS_LEN: tl.constexpr, UNITS: tl.constexpr, KB: tl.constexpr,
                           BLOCK_B: tl.constexpr):
    # grid: (D, cdiv(B, BLOCK_B)); each program owns every unit of its direction and batch rows.
    d = tl.program_id(0)
    D = tl.num_programs(0)
    rev = (d + rev_base) % 2
    b = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    b_mask = b < B
    w_d = whh_ptr + d.to(tl.int64) * 4 * H * H
    for s in range(0, T):
        t = tl.where(rev == 1, T - 1 - s, s)
        t_prev = tl.where(rev == 1, t + 1, t - 1)
        h_rows = (b.to(tl.int64) * T + t_prev) * (H * D) + d * H
        for u0 in range(0, H, UNITS):
            units = u0 + tl.arange(0, UNITS)
            u_mask = units < H
            zero = tl.zeros([BLOCK_B, UNITS], dtype=tl.float32)
            hw_i, hw_f, hw_g, hw_o = _gates_acc(zero, zero, zero, zero, out_ptr, h_rows, b_mask & (s > 0),
                                                w_d, units, u_mask, H, H, KB)
            _step_store(xp_ptr, out_ptr, c_ptr, len_ptr, hw_i, hw_f, hw_g, hw_o,
                        b, b_mask, units, u_mask, d, t, s, B, T, H, D, HAS_LEN)
        tl.debug_barrier()


@triton.jit
def _lstm_cell_kernel(x_ptr, h_ptr, c_ptr, wih_ptr, whh_ptr, bih_ptr, bhh_ptr, h_out_ptr, c_out_ptr,
                      B, I, H, UNITS: tl.constexpr, KB: tl.constexpr, BLOCK_B: tl.constexpr):
    # grid: (cdiv(B, BLOCK_B), cdiv(H, UNITS)).
    b = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    b_mask = b < B
    units = tl.program_id(1) * UNITS + tl.arange(0, UNITS)
    u_mask = units < H
    m2 = b_mask[:, None] & u_mask[None, :]
    zero = tl.zeros([BLOCK_B, UNITS], dtype=tl.float32)
    bi = tl.load(bih_ptr + units, mask=u_mask, other=0.0) + tl.load(bhh_ptr + units, mask=u_mask, other=0.0)
    bf = tl.load(bih_ptr + H + units, mask=u_mask, other=0.0) + tl.load(bhh_ptr + H + units, mask=u_mask, other=0.0)
    bg = (tl.load(bih_ptr + 2 * H + units, mask=u_mask, other=0.0) +
          tl.load(bhh_ptr + 2 * H + units, mask=u_mask, other=0.0))
    bo = (tl.load(bih_ptr + 3 * H + units, mask=u_mask, other=0.0) +
          tl.load(bhh_ptr + 3 * H + units, mask=u_mask, other=0.0))
    gi, gf, gg, go = _gates_acc(zero + bi[None, :], zero + bf[None, :], zero + bg[None, :], zero + bo[None, :],
                                x_ptr, b.to(tl.int64) * I, b_mask, wih_ptr, units, u_mask, H, I, KB)
    gi, gf, gg, go = _gates_acc(gi, gf, gg, go, h_ptr, b.to(tl.int64) * H, b_mask, whh_ptr, units, u_mask,
                                H, H, KB)
    offs = b.to(tl.int64)[:, None] * H + units[None, :]
    h_new, c_new = _cell_update(gi, gf, gg, go, tl.load(c_ptr + offs, mask=m2, other=0.0))
    tl.store(h_out_ptr + offs, h_new, mask=m2)
    tl.store(c_out_ptr + offs, c_new, mask=m2)


# ---------------------------------------------------------------------------------------------------
# launch planning and launchers
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LstmPlan:
    """How a sequence launch is laid out: path, programs per direction, units per program, tile sizes."""
    path: str      # "resident" or "streaming"
    nsplit: int    # programs per direction (resident); 1 for streaming
    units: int     # hidden units per program (resident) or per inner block (streaming)
    block_k: int   # K tile: all of H (resident) or a chunk of it (streaming)
    block_b: int   # batch rows per inner block


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def plan_lstm(B: int, H: int, D: int, device: torch.device, path: str | None = None) -> LstmPlan:
    """Resident split when all programs fit on the SMs at once, else streaming; `path` forces one."""
    if path not in (None, "resident", "streaming"):
        raise ValueError(f"lstm: path must be None, 'resident' or 'streaming', got {path!r}")
    block_k = triton.next_power_of_2(H)
    if path != "streaming":
        if _interpreting():
            return LstmPlan("resident", 1, block_k, block_k, min(triton.next_power_of_2(B), INTERPRET_BLOCK_B))
        units = min(block_k, _pow2_floor(RESIDENT_WEIGHTS // (4 * block_k)))
        nsplit = triton.cdiv(H, units)
        n_sm = torch.cuda.get_device_properties(device).multi_processor_count
        if D * nsplit <= n_sm:
            block_b = max(1, min(triton.next_power_of_2(B), PRODUCT_TILE // (units * block_k), MAX_BLOCK_B))
            return LstmPlan("resident", nsplit, units, block_k, block_b)
        if path == "resident":
            raise ValueError(f"lstm: the resident path needs {D}x{nsplit} co-resident programs for H={H}, "
                             f"more than the {n_sm} SMs; use path='streaming' or None")
    units = min(STREAM_UNITS, block_k)
    block_b = min(triton.next_power_of_2(B), MAX_BLOCK_B)
    kb = max(16, min(block_k, STREAM_TILE // (block_b * units)))
    return LstmPlan("streaming", 1, units, kb, block_b)


def _check_lstm_args(x, w_ih, w_hh, b_ih, b_hh, lengths, reverse):
    for name, t in (("x", x), ("w_ih", w_ih), ("w_hh", w_hh), ("b_ih", b_ih), ("b_hh", b_hh)):
        if t.dtype != torch.float32:
            raise ValueError(f"lstm: recurrences run in float32 only; {name} is {t.dtype}. Cast with .float()")
    if x.dim() != 3 or w_ih.dim() != 3:
        raise ValueError(f"lstm: expects x [B, T, I] and stacked w_ih [D, 4H, I], got {tuple(x.shape)}, "
                         f"{tuple(w_ih.shape)}")
    D, H4, I = w_ih.shape
    H = H4 // 4
    expected = {"w_ih": (D, 4 * H, x.shape[2]), "w_hh": (D, 4 * H, H), "b_ih": (D, 4 * H), "b_hh": (D, 4 * H)}
    for name, t in (("w_ih", w_ih), ("w_hh", w_hh), ("b_ih", b_ih), ("b_hh", b_hh)):
        if tuple(t.shape) != expected[name] or H4 % 4:
            raise ValueError(f"lstm: {name} must be {expected[name]} for x {tuple(x.shape)} and w_ih "
                             f"{tuple(w_ih.shape)}, got {tuple(t.shape)}")
    if D not in (1, 2) or (reverse and D == 2):
        raise ValueError(f"lstm: D={D} directions with reverse={reverse}; use D=1 (forward, or backward with "
                         "reverse=True) or D=2 (bidirectional, reverse=False)")
    if lengths is not None:
        if lengths.shape != (x.shape[0],):
            raise ValueError(f"lstm: lengths must be [B={x.shape[0]}], got {tuple(lengths.shape)}")
        if not lengths.is_cuda and (lengths.min() < 0 or lengths.max() > x.shape[1]):
            raise ValueError(f"lstm: lengths must lie in [0, T={x.shape[1]}], got {lengths.tolist()}")


def lstm(x: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor, b_ih: torch.Tensor, b_hh: torch.Tensor,
         lengths: torch.Tensor | None = None, reverse: bool = False, path: str | LstmPlan | None = None,
         out: torch.Tensor | None = None) -> torch.Tensor:
    """Whole-sequence LSTM (see the module doc); weights stacked per direction [D, ...].

    path: None (plan_lstm decides), "resident" or "streaming" (forced), or an LstmPlan used as given.
    """
    _check_lstm_args(x, w_ih, w_hh, b_ih, b_hh, lengths, reverse)
    B, T, I = x.shape
    D, H4, _ = w_ih.shape
    H = H4 // 4
    out = x.new_empty(B, T, D * H) if out is None else out
    if B == 0 or T == 0 or H == 0:
        return out
    xp = torch.addmm((b_ih + b_hh).reshape(D * H4), x.reshape(B * T, I), w_ih.reshape(D * H4, I).t())
    w_hh = w_hh.contiguous()
    c = x.new_empty(D, B, H)
    lens = x if lengths is None else lengths.to(device=x.device, dtype=torch.int64)
    p = path if isinstance(path, LstmPlan) else plan_lstm(B, H, D, x.device, path)
    if p.path == "resident" and p.nsplit > 1 and T > 1 and _interpreting():
        raise ValueError(f"lstm: a plan with {p.nsplit} programs per direction would wait forever at the first "
                         "barrier in the interpreter (programs run one at a time); use nsplit=1 or T=1")
    if p.path == "resident":
        sync = torch.zeros(D, dtype=torch.int32, device=x.device)
        _lstm_resident_kernel[(D * p.nsplit,)](
            xp, w_hh, out, c, lens, sync, B, T, H, int(reverse), HAS_LEN=lengths is not None,
            NSPLIT=p.nsplit, UNITS=p.units, BLOCK_K=p.block_k, BLOCK_B=p.block_b, num_warps=8)
    else:
        _lstm_streaming_kernel[(D, triton.cdiv(B, p.block_b))](
            xp, w_hh, out, c, lens, B, T, H, int(reverse), HAS_LEN=lengths is not None,
            UNITS=p.units, KB=p.block_k, BLOCK_B=p.block_b, num_warps=8)
    return out


CELL_UNITS = 32
CELL_BLOCK_B = 4


def lstm_cell(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor,
              b_ih: torch.Tensor, b_hh: torch.Tensor,
              out: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step for a batch: (h', c') from x [B, I], h, c [B, H] and one direction's weights."""
    B, I = x.shape
    H = w_hh.shape[1]
    for name, t, shape in (("x", x, (B, I)), ("h", h, (B, H)), ("c", c, (B, H)), ("w_ih", w_ih, (4 * H, I)),
                           ("w_hh", w_hh, (4 * H, H)), ("b_ih", b_ih, (4 * H,)), ("b_hh", b_hh, (4 * H,))):
        if tuple(t.shape) != shape or t.dtype != torch.float32 or not t.is_contiguous():
            raise ValueError(f"lstm_cell: {name} must be a contiguous float32 {shape}, "
                             f"got {t.dtype} {tuple(t.shape)}")
    h_out, c_out = (torch.empty_like(h), torch.empty_like(c)) if out is None else out
    if B and H:
        units = min(CELL_UNITS, triton.next_power_of_2(H))
        block_b = min(CELL_BLOCK_B, triton.next_power_of_2(B))
        kb = max(16, min(triton.next_power_of_2(max(I, H)), STREAM_TILE // (units * block_b)))
        _lstm_cell_kernel[(triton.cdiv(B, block_b), triton.cdiv(H, units))](
            x, h, c, w_ih, w_hh, b_ih, b_hh, h_out, c_out, B, I, H,
            UNITS=units, KB=kb, BLOCK_B=block_b, num_warps=8)
    return h_out, c_out


# ---------------------------------------------------------------------------------------------------
# float64 oracles (the PyTorch peers, cuDNN on the GPU and the CPU path of tilewave.ops: tilewave/reference/rnn.py)
# ---------------------------------------------------------------------------------------------------
def lstm_oracle(x, w_ih, w_hh, b_ih, b_hh, lengths=None, reverse=False, path=None):
    B, T, _ = x.shape
    D, H = w_hh.shape[0], w_hh.shape[2]
    seq = torch.full((B,), T) if lengths is None else lengths
    out = x.new_zeros(B, T, D * H)
    for d in range(D):
        h, c = x.new_zeros(B, H), x.new_zeros(B, H)
        for t in (reversed(range(T)) if d == 1 or reverse else range(T)):
            i, f, g, o = (x[:, t] @ w_ih[d].T + b_ih[d] + h @ w_hh[d].T + b_hh[d]).chunk(4, dim=1)
            c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h_new = torch.sigmoid(o) * torch.tanh(c_new)
            active = (t < seq)[:, None]
            c, h = torch.where(active, c_new, c), torch.where(active, h_new, h)
            out[:, t, d * H:(d + 1) * H] = torch.where(active, h_new, 0.0)
    return out


def lstm_cell_oracle(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new


# ---------------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------------
def _weights(shape, H, device, gen):
    # nn.LSTM's initialisation range U(-1/sqrt(H), 1/sqrt(H)).
    bound = 1.0 / math.sqrt(H)
    return rand(shape, torch.float32, device, gen, -bound, bound)


def _lstm_inputs(p, dtype, device, gen):
    B, T, I, H, D = p["B"], p["T"], p["I"], p["H"], p["D"]
    inputs = {"x": randn((B, T, I), dtype, device, gen),
              "w_ih": _weights((D, 4 * H, I), H, device, gen), "w_hh": _weights((D, 4 * H, H), H, device, gen),
              "b_ih": _weights((D, 4 * H), H, device, gen), "b_hh": _weights((D, 4 * H), H, device, gen),
              "lengths": None, "reverse": p.get("reverse", False), "path": p.get("path")}
    if p.get("lengths"):
        # one full-length row and the rest shorter (down to 1), in no particular order
        lens = torch.randint(1, T + 1, (B,), generator=gen)
        lens[torch.randint(0, B, (1,), generator=gen)] = T
        inputs["lengths"] = lens.to(device)
    return inputs


def _lstm_flops(p):
    B, T, I, H, D = p["B"], p["T"], p["I"], p["H"], p["D"]
    return B * T * D * (2 * 4 * H * (I + H) + 12 * H)


def _lstm_bytes(p, itemsize):
    B, T, I, H, D = p["B"], p["T"], p["I"], p["H"], p["D"]
    return itemsize * (B * T * I + D * 4 * H * (I + H + 2) + B * T * D * H)


def _lstm_variants():
    seq = {"xp_ptr": "*fp32", "whh_ptr": "*fp32", "out_ptr": "*fp32", "c_ptr": "*fp32", "len_ptr": "*i64",
           "B": "i32", "T": "i32", "H": "i32", "rev_base": "i32"}
    out = []
    # (NSPLIT, UNITS, BLOCK_K, BLOCK_B) the GPU planner picks: H=256 at batch 1 and 2+, H=512, H<=64
    for nsplit, units, bk, bb in ((16, 16, 256, 1), (16, 16, 256, 2), (64, 8, 512, 2), (1, 64, 64, 2)):
        for has_len in (False, True):
            out.append(AotVariant(f"_lstm_resident_kernel[H<={bk},split={nsplit},bb={bb},len={has_len}]",
                                  _lstm_resident_kernel, {**seq, "sync_ptr": "*i32"},
                                  {"HAS_LEN": has_len, "NSPLIT": nsplit, "UNITS": units, "BLOCK_K": bk,
                                   "BLOCK_B": bb}, num_warps=8))
    for bb in (1, 8):
        for has_len in (False, True):
            kb = max(16, STREAM_TILE // (bb * STREAM_UNITS))
            out.append(AotVariant(f"_lstm_streaming_kernel[bb={bb},len={has_len}]", _lstm_streaming_kernel, seq,
                                  {"HAS_LEN": has_len, "UNITS": STREAM_UNITS, "KB": kb, "BLOCK_B": bb},
                                  num_warps=8))
    return out


def _lstm_case(B, T, I, H, D, devices=("cpu", "cuda"), **extra):
    return Case({"B": B, "T": T, "I": I, "H": H, "D": D, **extra}, devices)


register(Kernel(
    name="lstm", family="rnn", used_by=("kokoro",),
    doc="whole-sequence LSTM (i, f, g, o), forward/backward/bidirectional, optional lengths, one launch",
    make_inputs=_lstm_inputs, alloc_out=lambda i: i["x"].new_empty(
        i["x"].shape[0], i["x"].shape[1], i["w_ih"].shape[0] * i["w_hh"].shape[2]),
    launch=lstm, oracle=lstm_oracle, peer=lstm_torch, dtypes=("float32",), tol_kind="recurrence",
    cases=[_lstm_case(2, 9, 20, 24, 1),
           _lstm_case(1, 7, 16, 20, 1, reverse=True),
           _lstm_case(3, 11, 13, 16, 2, lengths=True),
           _lstm_case(5, 10, 12, 20, 2, lengths=True, path="streaming"),
           _lstm_case(2, 6, 40, 70, 1, reverse=True, lengths=True, path="streaming"),
           _lstm_case(1, 65, 640, 256, 2),
           _lstm_case(1, 1600, 640, 256, 2, devices=("cuda",)),
           _lstm_case(1, 1000, 640, 256, 1, devices=("cuda",), reverse=True),
           _lstm_case(5, 301, 640, 256, 2, devices=("cuda",), lengths=True),
           _lstm_case(3, 200, 96, 1000, 2, devices=("cuda",), lengths=True),
           _lstm_case(2, 257, 80, 300, 2, devices=("cuda",), lengths=True),
           _lstm_case(9, 120, 512, 512, 2, devices=("cuda",)),
           _lstm_case(2, 150, 640, 256, 2, devices=("cuda",), lengths=True, path="streaming"),
           _lstm_case(3, 500, 64, 48, 2, devices=("cuda",), lengths=True)],
    bench=[BenchShape("Kokoro duration encoder BiLSTM 640->2x256, 65 tokens", {"B": 1, "T": 65, "I": 640,
                      "H": 256, "D": 2}, flops=_lstm_flops, bytes=_lstm_bytes),
           BenchShape("Kokoro shared BiLSTM 640->2x256, 1,600 frames", {"B": 1, "T": 1600, "I": 640, "H": 256,
                      "D": 2}, flops=_lstm_flops, bytes=_lstm_bytes),
           BenchShape("large BiLSTM 1024->2x512, batch 8, 1,000 steps", {"B": 8, "T": 1000, "I": 1024, "H": 512,
                      "D": 2}, flops=_lstm_flops, bytes=_lstm_bytes)],
    variants=_lstm_variants,
))


def _cell_inputs(p, dtype, device, gen):
    B, I, H = p["B"], p["I"], p["H"]
    return {"x": randn((B, I), dtype, device, gen), "h": randn((B, H), dtype, device, gen, scale=0.5),
            "c": randn((B, H), dtype, device, gen), "w_ih": _weights((4 * H, I), H, device, gen),
            "w_hh": _weights((4 * H, H), H, device, gen), "b_ih": _weights((4 * H,), H, device, gen),
            "b_hh": _weights((4 * H,), H, device, gen)}


def _cell_flops(p):
    return p["B"] * (2 * 4 * p["H"] * (p["I"] + p["H"]) + 12 * p["H"])


def _cell_bytes(p, itemsize):
    B, I, H = p["B"], p["I"], p["H"]
    return itemsize * (B * I + 4 * B * H + 4 * H * (I + H + 2))


register(Kernel(
    name="lstm_cell", family="rnn", used_by=(), doc="one LSTM step for a batch: (h', c') = cell(x, h, c)",
    make_inputs=_cell_inputs, alloc_out=lambda i: (torch.empty_like(i["h"]), torch.empty_like(i["c"])),
    launch=lstm_cell, oracle=lstm_cell_oracle, peer=lstm_cell_torch, dtypes=("float32",),
    tol_kind="recurrence",
    cases=[Case({"B": 3, "I": 20, "H": 24}), Case({"B": 5, "I": 100, "H": 40}),
           Case({"B": 1, "I": 640, "H": 256}, devices=("cuda",)), Case({"B": 67, "I": 512, "H": 500}, ("cuda",))],
    bench=[BenchShape("Kokoro BiLSTM step 640->256, batch 1", {"B": 1, "I": 640, "H": 256},
                      flops=_cell_flops, bytes=_cell_bytes),
           BenchShape("large step 1024->1024, batch 256", {"B": 256, "I": 1024, "H": 1024},
                      flops=_cell_flops, bytes=_cell_bytes)],
    variants=lambda: [AotVariant(f"_lstm_cell_kernel[bb={bb}]", _lstm_cell_kernel,
                                 {"x_ptr": "*fp32", "h_ptr": "*fp32", "c_ptr": "*fp32", "wih_ptr": "*fp32",
                                  "whh_ptr": "*fp32", "bih_ptr": "*fp32", "bhh_ptr": "*fp32",
                                  "h_out_ptr": "*fp32", "c_out_ptr": "*fp32", "B": "i32", "I": "i32", "H": "i32"},
                                 {"UNITS": CELL_UNITS, "KB": max(16, STREAM_TILE // (CELL_UNITS * bb)),
                                  "BLOCK_B": bb}, num_warps=8) for bb in (1, CELL_BLOCK_B)],
))
