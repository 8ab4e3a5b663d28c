"""Softmax attention, flash style: one pass over the keys with an online softmax, nothing T x T in memory.

sdpa_bidirectional           o[b,h,i] = Σ_j softmax_j(scale·q_i·k_j) v_j over keys j with
                             key_padding_mask[b, j] True (no mask: every key).
                             q [B, H, Tq, D], k, v [B, H, Tk, D], key_padding_mask [B, Tk] bool.
sdpa_bidirectional_windowed  the same where query i sees only keys j in [seg_start[i], seg_start[i] + seg_len[i]).
                             q, k, v [B, H, T, D]; seg_start, seg_len [T] int32, shared by batch and heads.
                             Tokens are pre-permuted into window order (Qwen2.5-VL style), so a query block's
                             windows are few and adjacent: the kernel visits only the key blocks they span.
sdpa_rel_pos_conformer       score_ij = scale·((q_i + u_h)·k_j + (q_i + v_h)·rel_emb[dist_ij, h]),
                             dist_ij = clamp(j + rel_zero − i, 0, rel_len − 1), then softmax·V (Transformer-XL).
                             q [B, H, Tq, D], k, v [B, H_kv, Tk, D] (GQA: query head h reads KV head
                             h // (H / H_kv)); pos_bias_u, pos_bias_v [H, D]; rel_emb [rel_len, H, D]
                             (per query head; a [H, rel_len, D] tensor passes as .transpose(0, 1): only the
                             D stride must be 1). rel_zero is the row of rel_emb for relative offset j − i = 0;
                             the default rel_zero = Tq − 1 with rel_len = Tq + Tk − 1 covers every offset
                             from −(Tq − 1) to Tk − 1 unclamped (ESPnet's RelPositionalEncoding order).
sdpa_decode_sink             one query per (batch, head): o = Σ_j p_j v_j with p = softmax over the attended keys
                             plus a virtual key whose logit is sinks[h] (same units as scale·q·k) and whose value
                             is 0: the sink joins the max and the denominator only. q [B, H, D] (or [B, H, 1, D]),
                             KV cache [B, H_kv, T, D], sinks [H], optional cache_lens [B] int32 (keys [0, len)),
                             optional window W (keys [len − W, len)). Split-K (flash-decoding): the keys of
                             every (batch, KV head) are spread over `num_splits` programs, each handling up to 16
                             query heads of the GQA group with one tl.dot per key tile (so the cache is read once
                             per group); the partial (max, sum, accumulator) triples are then merged with the
                             sink by a second, combine launch (one program per head; on sm_90 a programmatic
                             dependent launch, whose start overlaps the split kernel), or in the same launch by
                             the split of a head tile that arrives last (an arrival counter per tile), where
                             that is faster (_decode_plan: the float32 forms up to 8k keys; benchmarks/TILE_HISTORY.md).
                             A sink of -inf means no sink.

A query whose keys are all masked (padding, an empty window, an empty cache) outputs 0, not NaN.
Softmax runs in the log2 domain (scale·log2 e folded into the scores, exp2); accumulation is float32 for
every storage dtype (float32, float16, bfloat16). tl.dot takes the storage dtype's operands; float32 storage
passes input_precision explicitly, taken by the ops from tilewave.precision.current(): 'ieee' (exact, FMA units),
'tf32x3' (high and low tf32 parts, three tensor-core MMAs: float32-class error) or 'tf32' (~1e-3).
PyTorch's float32 F.scaled_dot_product_attention on sm_80+ runs the memory-efficient CUTLASS kernel, whose
float32 GEMMs are 3xTF32 (mem_eff_attention/gemm_kernel_utils.h: DefaultGemmType<sm80+, float> uses
OpMultiplyAddFastF32) whatever torch.backends.cuda.matmul.allow_tf32 says: tf32x3 is the like-for-like peer.
Launch invariants: the last (D) dimension of every tensor is contiguous (other strides are free); D <= 128
(D is padded inside the block and masked: to 64 or 128 on the GPU, so D = 80 runs in a 128-wide block);
every tl.dot dimension is >= 16.

Files: common.py (the online-softmax step, row loads and stores, argument checks), plan.py (tile tables per dot
form and the decode plan), sdpa.py (bidirectional, windowed and relative-position forward kernels and launchers),
decode.py (split-K decode with its fused or separate combine), cases.py (registration). The PyTorch peers (the
equivalent explicit mask or bias, zeroing rows with no key; the CPU path of tilewave.ops) and the float64 oracles
are tilewave/reference/attention.py.
"""
from tilewave.kernels.attention import cases  # noqa: F401 (registers the attention kernels)
from tilewave.kernels.attention.common import MAX_HEAD_DIM
from tilewave.kernels.attention.decode import sdpa_decode_sink
from tilewave.kernels.attention.sdpa import sdpa_bidirectional, sdpa_bidirectional_windowed, sdpa_rel_pos_conformer
from tilewave.reference.attention import (decode_attend_mask, rel_pos_bias, rel_pos_index, sdpa_bidirectional_torch,
                                         sdpa_bidirectional_windowed_torch, sdpa_decode_sink_oracle,
                                         sdpa_decode_sink_torch, sdpa_oracle, sdpa_rel_pos_conformer_torch,
                                         sdpa_rel_pos_oracle, sdpa_windowed_oracle, segments_from_lengths, window_mask)

__all__ = ["MAX_HEAD_DIM", "decode_attend_mask", "rel_pos_bias", "rel_pos_index", "sdpa_bidirectional",
           "sdpa_bidirectional_torch", "sdpa_bidirectional_windowed", "sdpa_bidirectional_windowed_torch",
           "sdpa_decode_sink", "sdpa_decode_sink_oracle", "sdpa_decode_sink_torch", "sdpa_oracle",
           "sdpa_rel_pos_conformer", "sdpa_rel_pos_conformer_torch", "sdpa_rel_pos_oracle", "sdpa_windowed_oracle",
           "segments_from_lengths", "window_mask"]
