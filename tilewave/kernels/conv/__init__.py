"""1-D convolutions, NCL layout: conv, transposed conv, depthwise transposed conv, and a fused form.

conv1d            y[b, o, t] = bias[o] + Σ_{c ∈ group(o), k} W[o, c, k] · x[b, c, t·s + k·d − p]
                  W [C_out, C_in/G, K] (OIK);  L_out = ⌊(L + 2p − d(K − 1) − 1) / s⌋ + 1
conv1d_transpose  y[b, o, t] = bias[o] + Σ_{c ∈ group(o), k, i} W[c, o, k] · x[b, c, i]
                  over i·s + k·d − p = t, 0 ≤ i < L
                  W [C_in, C_out/G, K] (IOK);  L_out = (L − 1)·s − 2p + d(K − 1) + output_padding + 1
                  gather form: each output sums the inputs that reach it, so no atomics and no zeroing pass.
conv1d_transpose_depthwise   the transposed conv with G = C_in = C_out, W [C, 1, K].
conv1d_fused      y = scale · (conv(act(x)) + bias + residual), for conv and transposed conv, where
                  act is leaky_relu (runtime slope) or snake (x + sin(α_c·x)² / (β_c + 1e-9), per input
                  channel; β = α for plain snake). Both acts map 0 to 0, so activating the zero-padded
                  input equals padding the activated one. The act runs inside the loads; snake, whose
                  sin is costly, only while each input is activated at most SNAKE_FUSED_MAX_REPEATS
                  times (taps × output-channel tiles), else in one separate pass first.

Three designs, chosen per call by `plan.conv_plan` (uses_gemm, uses_tap_kernel, tap_kernel_fits; tiles by
pick_tap_config / pick_interleaved_config / pick_gemm_config), each launched by one short launcher:
- tap-major implicit GEMM (tap.py) for tensor-core calls (16-bit storage, or float32 as tf32 or
  tf32x3) whose taps are contiguous shifts of the input: stride-1 convs and every phase of a transposed
  conv. The reduction walks (tap u, block of BLOCK_K input channels), so both operands are rectangles:
  the weight repacked once per (weight, version) to [G·phases·C_out/G, U·C_in_pad] (channels zero-padded
  to the block), and x[b, c0 : c0+BK, t0 + shift_u : +BN]. On sm_90 both arrive by TMA (tensor
  descriptors) and Triton's pipeliner overlaps the copies with the asynchronous wgmma; x goes through one
  copy into time-major layout with zero rows for the padding (a TMA box must start 16-byte aligned in its
  innermost dimension: channels, not the shifted time). An input activation runs on the B tile in
  registers. In the CPU interpreter the same rectangles come through masked loads from x. GPUs without
  TMA keep the gather kernel.
  A transposed conv runs there in one of two forms (`uses_interleaved_phases`, per tile class and stride,
  whichever is faster: benchmarks/TILE_HISTORY.md): one phase per program, each storing its outputs `stride`
  elements apart, or
  phase-interleaved: all phases of a time tile in one program, as ONE stride-1 conv whose rows are (o, φ)
  (P = next_power_of_2(s) rows per output channel, zero for φ ≥ s) over the union of the phases' input
  shifts (U' = span of base_φ − u·d/g; a phase's missing shifts are zero weights). Row (o, φ), column j of
  the accumulator is y[o, j·s + φ]: the epilogue reshapes [BM/P, P, BN] → [BM/P, BN·P] in registers and
  stores stretches contiguous along time (16-byte vectors where s = P). It spends up to U'/U · P/s more
  tensor-core work on the zeros, for full-width stores.
- gather implicit GEMM (gemm.py) for exact float32 (FMA units) and strided convs, per group:
  M = C_out/G output channels, N = output positions, reduction R = (C_in/G) × taps. A is the weight: OIK rows are
  already contiguous over (c, k), so the reduction loop walks the weight contiguously and the taps sit inside it;
  B is gathered from x on the fly
  (masked loads give the zero padding). A transposed conv is split by output phase φ = t mod s: outputs
  t = φ + s·j receive exactly the taps k ≡ k0_φ (mod s/gcd(s, d)), a stride-1 conv in j whose input
  offset is base_φ − u·d/gcd(s, d) for the u-th tap. Its weight is repacked once per (weight, version)
  into [G, s, C_out/G, (C_in/G)·U] with zero taps where k ≥ K. Weight tiles stream through cp.async
  stages; the x tile starts at an arbitrary element (the tap shift), which cp.async cannot take for
  2-byte elements, so 16-bit kernels load the next x tile into registers while the current dot runs.
- direct (direct.py, no dot) for depthwise and tiny channel counts (tl.dot needs M, N, K ≥ 16 on the GPU).
Precision: float32 storage multiplies in exact float32 ('ieee', FMA), 'tf32x3' (tensor cores, each product
split into high and low tf32 parts: float32-class error) or 'tf32' (tensor cores, ~1e-3 relative);
float16/bfloat16 storage runs on tensor cores; accumulation is float32 always.
Launch invariants: x [B, C_in, L] (or [C_in, L]); every tensor is made contiguous; one dtype for
x, weight, bias and residual; offsets into x and y are int64 (B·C·L may pass 2³¹). TMA: a box past a
group's channels reads the next group's inputs, multiplied by zero weights, so a non-finite value there
would leak into the sum (the pointer path masks them); grouped calls whose group starts are not
16-byte aligned run on the gather kernel.

Files: common.py (the activation and store run inside the kernels), transpose.py (phase geometry, the interleaving
pass), plan.py (tile tables and the pure plan), pack.py (weight repacking, cached per weight), tap.py, gemm.py,
direct.py (kernel + launcher each), launch.py (argument checks and the public functions), reference.py (float64
oracles; the PyTorch paths are tilewave/reference/conv.py), cases.py (registration).
"""
from tilewave.kernels.conv import cases  # noqa: F401 (registers the conv kernels)
from tilewave.kernels.conv.common import ACTS
from tilewave.kernels.conv.launch import (conv1d, conv1d_fused, conv1d_transpose, conv1d_transpose_depthwise,
                                          time_major_layout)
from tilewave.kernels.conv.plan import (DIRECT_CONFIGS, GEMM_CONFIGS, INTERLEAVED_CONFIGS, INTERLEAVED_MAX_EXTRA_MACS,
                                        INTERLEAVED_STRIDES, PHASE_MAJOR_CLASSES, SNAKE_FUSED_MAX_REPEATS, TAP_CONFIGS,
                                        TAP_FUSED_MAX_N, GemmConfig, pick_gemm_config, pick_interleaved_config,
                                        pick_tap_config, tap_kernel_fits, tap_mode, uses_gemm, uses_interleaved_phases,
                                        uses_tap_kernel)
from tilewave.kernels.conv.reference import conv1d_fused_oracle, conv1d_oracle, conv1d_transpose_oracle
from tilewave.kernels.conv.tap import TIME_MAJOR_PAD_BLOCK, TimeMajor
from tilewave.kernels.conv.transpose import (conv1d_out_len, conv1d_transpose_out_len, interleave_block,
                                             interleaved_extra_macs, transpose_phase_plan)
from tilewave.reference.conv import activate_torch, conv1d_fused_torch

__all__ = ["ACTS", "DIRECT_CONFIGS", "GEMM_CONFIGS", "INTERLEAVED_CONFIGS", "INTERLEAVED_MAX_EXTRA_MACS",
           "INTERLEAVED_STRIDES", "PHASE_MAJOR_CLASSES", "SNAKE_FUSED_MAX_REPEATS", "TAP_CONFIGS", "TAP_FUSED_MAX_N",
           "TIME_MAJOR_PAD_BLOCK", "GemmConfig", "TimeMajor", "activate_torch", "conv1d", "conv1d_fused", "conv1d_fused_oracle",
           "conv1d_fused_torch", "conv1d_oracle", "conv1d_out_len", "conv1d_transpose", "conv1d_transpose_depthwise",
           "conv1d_transpose_oracle", "conv1d_transpose_out_len", "interleave_block", "interleaved_extra_macs",
           "pick_gemm_config", "pick_interleaved_config", "pick_tap_config", "tap_kernel_fits", "tap_mode", "time_major_layout", "uses_gemm",
           "uses_interleaved_phases", "uses_tap_kernel", "transpose_phase_plan"]
