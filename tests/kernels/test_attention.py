"""Attention properties the registry cases can't express: fully masked rows, split-K invariance, strided
inputs, degenerate special cases, and the PyTorch path of the ops against F.scaled_dot_product_attention."""
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import KERNEL_DEVICE
from tilewave import ops
from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import attention as K
from tilewave.ops import attention as A

TOL = tolerance("float32", "reduction")


def _randn(*shape, device=KERNEL_DEVICE, seed=0, scale=1.0):
    gen = torch.Generator().manual_seed(seed + sum(shape))
    return (torch.randn(shape, generator=gen) * scale).to(device)


def _f64(*ts):
    return [t.cpu().double() if t.is_floating_point() else t.cpu() for t in ts]


def test_all_keys_padded_outputs_zero_and_other_rows_are_exact():
    q, k, v = _randn(3, 2, 20, 32), _randn(3, 2, 40, 32, seed=1), _randn(3, 2, 40, 32, seed=2)
    mask = torch.ones(3, 40, dtype=torch.bool)
    mask[1] = False  # a batch entry with nothing to attend
    mask[2, 1:] = False  # a row with a single key
    mask = mask.to(KERNEL_DEVICE)
    out = K.sdpa_bidirectional(q, k, v, mask)
    assert torch.isfinite(out).all()
    assert out[1].abs().max().item() == 0.0
    ref = K.sdpa_oracle(*_f64(q, k, v, mask))
    assert scaled_max_error(out, ref) <= TOL
    assert scaled_max_error(out[2], v[2, :, :1].expand(2, 20, 32)) <= TOL


def test_padding_before_and_after_the_attended_keys_is_skipped_exactly():
    # the kernel visits only the key blocks between a sequence's first and last attended key
    q, k, v = _randn(2, 1, 9, 16), _randn(2, 1, 80, 16, seed=1), _randn(2, 1, 80, 16, seed=2)
    mask = torch.zeros(2, 80, dtype=torch.bool)
    mask[0, 37:50] = True
    mask[0, 41] = False
    mask[1, 79] = True
    mask = mask.to(KERNEL_DEVICE)
    out = K.sdpa_bidirectional(q, k, v, mask)
    assert scaled_max_error(out, K.sdpa_oracle(*_f64(q, k, v, mask))) <= TOL


def test_empty_window_outputs_zero():
    T = 40
    q, k, v = _randn(1, 2, T, 16), _randn(1, 2, T, 16, seed=1), _randn(1, 2, T, 16, seed=2)
    seg_start, seg_len = K.segments_from_lengths([17, 23], KERNEL_DEVICE)
    seg_len = seg_len.clone()
    seg_len[5:9] = 0  # queries that see no key at all
    out = K.sdpa_bidirectional_windowed(q, k, v, seg_start, seg_len)
    assert torch.isfinite(out).all() and out[:, :, 5:9].abs().max().item() == 0.0
    assert scaled_max_error(out, K.sdpa_windowed_oracle(*_f64(q, k, v, seg_start, seg_len))) <= TOL


def test_windows_equal_separate_attention_per_window():
    lengths = [9, 30, 1, 24]
    q, k, v = _randn(1, 2, 64, 32), _randn(1, 2, 64, 32, seed=1), _randn(1, 2, 64, 32, seed=2)
    seg_start, seg_len = K.segments_from_lengths(lengths, KERNEL_DEVICE)
    out = K.sdpa_bidirectional_windowed(q, k, v, seg_start, seg_len)
    start = 0
    for n in lengths:
        w = slice(start, start + n)
        ref = F.scaled_dot_product_attention(*(t[:, :, w].cpu().double() for t in (q, k, v)))
        assert scaled_max_error(out[:, :, w], ref) <= TOL, f"window {w}"
        start += n


def test_windows_in_any_order_are_still_exact():
    # the block-range shortcut assumes window order for speed only: scattered windows stay correct
    T = 48
    q, k, v = _randn(1, 1, T, 16), _randn(1, 1, T, 16, seed=1), _randn(1, 1, T, 16, seed=2)
    gen = torch.Generator().manual_seed(5)
    seg_start = torch.randint(0, T, (T,), generator=gen, dtype=torch.int32)
    seg_len = torch.randint(0, T, (T,), generator=gen, dtype=torch.int32)
    dev = [t.to(KERNEL_DEVICE) for t in (seg_start, seg_len)]
    out = K.sdpa_bidirectional_windowed(q, k, v, *dev)
    assert scaled_max_error(out, K.sdpa_windowed_oracle(*_f64(q, k, v), seg_start, seg_len)) <= TOL


def test_decode_empty_cache_and_no_sink_outputs_zero():
    q, kc, vc = _randn(2, 4, 32), _randn(2, 2, 24, 32, seed=1), _randn(2, 2, 24, 32, seed=2)
    sinks = torch.full((4,), float("-inf"), device=KERNEL_DEVICE)
    lens = torch.tensor([24, 0], dtype=torch.int32, device=KERNEL_DEVICE)
    out = K.sdpa_decode_sink(q, kc, vc, sinks, lens)
    assert torch.isfinite(out).all() and out[1].abs().max().item() == 0.0
    # with no sink, a full cache is plain attention
    ref = F.scaled_dot_product_attention(q[:1, :, None].cpu().double(), *_f64(kc[:1], vc[:1]), enable_gqa=True)
    assert scaled_max_error(out[:1], ref[:, :, 0]) <= TOL


@pytest.mark.parametrize("num_splits", [1, 2, 3, 8])
def test_decode_does_not_depend_on_the_split_count(num_splits):
    q, kc, vc = _randn(1, 4, 16), _randn(1, 1, 60, 16, seed=1), _randn(1, 1, 60, 16, seed=2)
    sinks = _randn(4, seed=3)
    out = K.sdpa_decode_sink(q, kc, vc, sinks, window=41, num_splits=num_splits)
    ref = K.sdpa_decode_sink_oracle(*_f64(q, kc, vc, sinks), window=41)
    assert scaled_max_error(out, ref) <= TOL


def test_decode_fused_and_separate_combine_agree_and_the_counters_rearm():
    # the fused form's last-arriving split merges and resets its counter: a second launch on the same
    # counters must be right again, and both forms must match the oracle
    q, kc, vc = _randn(2, 8, 32), _randn(2, 2, 70, 32, seed=1), _randn(2, 2, 70, 32, seed=2)
    sinks = _randn(8, seed=3)
    lens = torch.tensor([70, 45], dtype=torch.int32, device=KERNEL_DEVICE)
    ref = K.sdpa_decode_sink_oracle(*_f64(q, kc, vc, sinks), cache_lens=lens.cpu())
    outs = [K.decode._launch_decode(q, kc, vc, sinks, lens, None, None, "ieee", 3, None, fused_combine=fused)
            for fused in (True, True, False)]
    for out in outs:
        assert scaled_max_error(out, ref) <= TOL
    assert (K.decode._arrival_counters_for(q.device, 4)[:4] == 0).all()


def test_decode_separate_combine_over_several_steps():
    # more splits than one combine step (COMBINE_BLOCK_S): the running max must carry across steps. Head 0 has
    # no sink, batch 1 an empty cache, batch 0's keys grow large late in the cache (the max moves in a later step).
    splits = 2 * K.plan.COMBINE_BLOCK_S + 5
    q, kc, vc = _randn(2, 4, 32), _randn(2, 2, 16 * splits, 32, seed=1), _randn(2, 2, 16 * splits, 32, seed=2)
    kc[0, :, -40:] *= 4.0
    sinks = _randn(4, seed=3)
    sinks[0] = float("-inf")
    lens = torch.tensor([16 * splits, 0], dtype=torch.int32, device=KERNEL_DEVICE)
    ref = K.sdpa_decode_sink_oracle(*_f64(q, kc, vc, sinks), cache_lens=lens.cpu())
    out = K.decode._launch_decode(q, kc, vc, sinks, lens, None, None, "ieee", splits, None, fused_combine=False)
    assert scaled_max_error(out, ref) <= TOL
    assert out[1].abs().max().item() == 0.0  # nothing cached: the sink alone contributes no value


@pytest.mark.parametrize("merge", [None, (8, 1024, 8), (8, 512, 16)])
@pytest.mark.parametrize("q_in_loop", [True, False])
def test_decode_fused_merge_forms_over_several_steps(merge, q_in_loop):
    # head dim 64: 2 splits a merge step (16 rows by default; 1 split for (8, 512, 16)); 3 splits, so the last
    # step is half masked. A GQA group of 12: the second 8-row head slice holds 4 heads and 4 padding rows.
    q, kc, vc = _randn(1, 24, 64), _randn(1, 2, 90, 64, seed=1), _randn(1, 2, 90, 64, seed=2)
    sinks = _randn(24, seed=3)
    out = K.decode._launch_decode(q, kc, vc, sinks, None, None, None, "ieee", 5, None, fused_combine=True,
                                  merge=merge, q_in_loop=q_in_loop)
    assert scaled_max_error(out, K.sdpa_decode_sink_oracle(*_f64(q, kc, vc, sinks))) <= TOL


def test_precisions_are_checked_and_tf32x3_runs():
    q, k, v = _randn(1, 2, 20, 16), _randn(1, 2, 20, 16, seed=1), _randn(1, 2, 20, 16, seed=2)
    out = K.sdpa_bidirectional(q, k, v, precision="tf32x3")
    assert scaled_max_error(out, K.sdpa_oracle(*_f64(q, k, v))) <= TOL
    with pytest.raises(ValueError, match="'tf33'.*ieee"):
        K.sdpa_bidirectional(q, k, v, precision="tf33")


@pytest.mark.parametrize("scale", [0.7, -0.7])
def test_whole_key_blocks_with_either_sign_of_scale(scale):
    # 32 keys fill whole blocks: a positive scale takes the unmasked form with the scale folded into the
    # FMA, a negative one (max(s)·scale is then not the max) the general form; both match the oracle
    q, k, v = _randn(1, 2, 24, 16), _randn(1, 2, 32, 16, seed=1), _randn(1, 2, 32, 16, seed=2)
    out = K.sdpa_bidirectional(q, k, v, scale=scale)
    assert scaled_max_error(out, K.sdpa_oracle(*_f64(q, k, v), scale=scale)) <= TOL


def test_decode_groups_larger_than_one_tile():
    # 20 query heads per KV head: two 16-row head tiles per group
    q, kc, vc = _randn(1, 40, 16), _randn(1, 2, 20, 16, seed=1), _randn(1, 2, 20, 16, seed=2)
    sinks = _randn(40, seed=3)
    out = K.sdpa_decode_sink(q, kc, vc, sinks)
    assert scaled_max_error(out, K.sdpa_decode_sink_oracle(*_f64(q, kc, vc, sinks))) <= TOL


def test_decode_accepts_a_singleton_query_axis():
    q, kc, vc = _randn(1, 2, 1, 16), _randn(1, 2, 20, 16, seed=1), _randn(1, 2, 20, 16, seed=2)
    sinks = _randn(2, seed=3)
    out = K.sdpa_decode_sink(q, kc, vc, sinks)
    assert out.shape == q.shape
    assert scaled_max_error(out, K.sdpa_decode_sink_oracle(*_f64(q, kc, vc, sinks))) <= TOL


def test_strided_inputs_match_contiguous():
    # [B, T, H, D] projections viewed as [B, H, T, D] without a copy
    q, k, v = (_randn(2, 33, 2, 16, seed=s).transpose(1, 2) for s in range(3))
    assert not q.is_contiguous()
    out = K.sdpa_bidirectional(q, k, v)
    ref = K.sdpa_bidirectional(q.contiguous(), k.contiguous(), v.contiguous())
    assert torch.equal(out, ref)


def test_rel_pos_accepts_head_major_rel_emb():
    T, H, D = 24, 2, 16
    q, k, v = _randn(1, H, T, D), _randn(1, 1, T, D, seed=1), _randn(1, 1, T, D, seed=2)
    rel_head_major = _randn(H, 2 * T - 1, D, seed=3)
    u, w = _randn(H, D, seed=4, scale=0.5), _randn(H, D, seed=5, scale=0.5)
    out = K.sdpa_rel_pos_conformer(q, k, v, rel_head_major.transpose(0, 1), u, w)
    ref = K.sdpa_rel_pos_conformer(q, k, v, rel_head_major.transpose(0, 1).contiguous(), u, w)
    assert torch.equal(out, ref)


def test_rel_pos_with_more_keys_than_queries_and_default_rel_zero():
    Tq, Tk, H, D = 20, 37, 2, 16
    q, k, v = _randn(1, H, Tq, D), _randn(1, H, Tk, D, seed=1), _randn(1, H, Tk, D, seed=2)
    rel, u, w = _randn(Tq + Tk - 1, H, D, seed=3), _randn(H, D, seed=4), _randn(H, D, seed=5)
    out = K.sdpa_rel_pos_conformer(q, k, v, rel, u, w)
    assert scaled_max_error(out, K.sdpa_rel_pos_oracle(*_f64(q, k, v, rel, u, w))) <= TOL


def test_rel_pos_with_zero_embeddings_and_biases_is_plain_attention():
    T, H, D = 30, 2, 32
    q, k, v = _randn(1, H, T, D), _randn(1, H, T, D, seed=1), _randn(1, H, T, D, seed=2)
    zeros = torch.zeros(H, D, device=KERNEL_DEVICE)
    out = K.sdpa_rel_pos_conformer(q, k, v, torch.zeros(2 * T - 1, H, D, device=KERNEL_DEVICE), zeros, zeros)
    assert scaled_max_error(out, K.sdpa_oracle(*_f64(q, k, v))) <= TOL


def test_rel_pos_offsets_pick_the_documented_rows():
    # rel_emb row r carries a one-hot key direction, so the score of (i, j) shows which row was read
    T, D = 20, 16
    rel_len, rel_zero = 7, 3
    q = torch.zeros(1, 1, T, D, device=KERNEL_DEVICE)
    q[..., 0] = 1.0
    rel = torch.zeros(rel_len, 1, D, device=KERNEL_DEVICE)
    rel[:, 0, 0] = torch.arange(rel_len, dtype=torch.float32) * 2.0
    k = torch.zeros(1, 1, T, D, device=KERNEL_DEVICE)
    v = _randn(1, 1, T, D, seed=2)
    zeros = torch.zeros(1, D, device=KERNEL_DEVICE)
    out = K.sdpa_rel_pos_conformer(q, k, v, rel, zeros, zeros, rel_zero=rel_zero, scale=1.0)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    scores = 2.0 * (j + rel_zero - i).clamp(0, rel_len - 1).double()
    ref = torch.softmax(scores, -1) @ v[0, 0].cpu().double()
    assert scaled_max_error(out[0, 0], ref) <= TOL


def test_errors_name_the_bad_value():
    q = torch.zeros(1, 2, 8, 16, device=KERNEL_DEVICE)
    with pytest.raises(ValueError, match="multiple of KV heads"):
        K.sdpa_rel_pos_conformer(q, q[:, :1].expand(1, 3, 8, 16), q[:, :1].expand(1, 3, 8, 16),
                                 torch.zeros(15, 2, 16), torch.zeros(2, 16), torch.zeros(2, 16))
    with pytest.raises(ValueError, match="head dim"):
        K.sdpa_bidirectional(*(torch.zeros(1, 1, 8, 200, device=KERNEL_DEVICE),) * 3)
    with pytest.raises(ValueError, match="key_padding_mask"):
        K.sdpa_bidirectional(q, q, q, torch.ones(1, 8, dtype=torch.int32, device=KERNEL_DEVICE))


# ---------------------------------------------------------------------------------------------------
# the PyTorch path of the ops (CPU tensors always take it)
# ---------------------------------------------------------------------------------------------------
def _cpu(*shape, seed=0):
    return _randn(*shape, device="cpu", seed=seed)


def test_op_bidirectional_torch_path_is_sdpa():
    q, k, v = _cpu(2, 12, 17, 64), _cpu(2, 12, 17, 64, seed=1), _cpu(2, 12, 17, 64, seed=2)
    mask = torch.arange(17)[None, :] < torch.tensor([[17], [9]])
    with ops.backend("torch"):
        out = A.sdpa_bidirectional(q, k, v, mask)
    assert torch.equal(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :]))
    mask[1] = False
    out = A.sdpa_bidirectional(q, k, v, mask)
    assert out[1].abs().max().item() == 0.0 and torch.isfinite(out).all()


def test_op_windowed_torch_path_matches_oracle():
    q, k, v = _cpu(1, 2, 30, 80), _cpu(1, 2, 30, 80, seed=1), _cpu(1, 2, 30, 80, seed=2)
    seg_start, seg_len = K.segments_from_lengths([10, 16, 4])
    out = A.sdpa_bidirectional_windowed(q, k, v, seg_start, seg_len)
    assert scaled_max_error(out, K.sdpa_windowed_oracle(*_f64(q, k, v), seg_start, seg_len)) <= K_TOL_CPU


def test_op_rel_pos_torch_path_matches_oracle():
    q, k, v = _cpu(2, 4, 21, 32), _cpu(2, 2, 21, 32, seed=1), _cpu(2, 2, 21, 32, seed=2)
    rel, u, w = _cpu(13, 4, 32, seed=3), _cpu(4, 32, seed=4), _cpu(4, 32, seed=5)
    out = A.sdpa_rel_pos_conformer(q, k, v, rel, u, w, rel_zero=6)
    ref = K.sdpa_rel_pos_oracle(*_f64(q, k, v, rel, u, w), rel_zero=6)
    assert scaled_max_error(out, ref) <= K_TOL_CPU


def test_op_decode_torch_path_matches_oracle():
    q, kc, vc = _cpu(3, 8, 64), _cpu(3, 2, 50, 64, seed=1), _cpu(3, 2, 50, 64, seed=2)
    sinks = _cpu(8, seed=3)
    lens = torch.tensor([50, 12, 0], dtype=torch.int32)
    out = A.sdpa_decode_sink(q, kc, vc, sinks, lens, window=20)
    ref = K.sdpa_decode_sink_oracle(*_f64(q, kc, vc, sinks), cache_lens=lens, window=20)
    assert scaled_max_error(out, ref) <= K_TOL_CPU
    assert out[2].abs().max().item() == 0.0


K_TOL_CPU = tolerance("float32", "pointwise")  # PyTorch's float32 CPU path is exact float32 arithmetic


def test_ops_run_where_placed_and_agree_with_the_torch_path():
    """On a GPU the ops take the Triton kernels; on a CPU the PyTorch path. Either way they match it."""
    dev = KERNEL_DEVICE
    q, k, v = _randn(2, 4, 24, 32), _randn(2, 4, 24, 32, seed=1), _randn(2, 4, 24, 32, seed=2)
    mask = (torch.arange(24)[None, :] < torch.tensor([[24], [7]])).to(dev)
    seg_start, seg_len = K.segments_from_lengths([5, 19], dev)
    rel, u, w = _randn(47, 4, 32, seed=3), _randn(4, 32, seed=4), _randn(4, 32, seed=5)
    sinks, lens = _randn(4, seed=6), torch.tensor([24, 3], dtype=torch.int32, device=dev)
    calls = {
        "sdpa_bidirectional": lambda *t: A.sdpa_bidirectional(*t[:3], t[3]),
        "sdpa_bidirectional_windowed": lambda *t: A.sdpa_bidirectional_windowed(*t[:3], t[4], t[5]),
        "sdpa_rel_pos_conformer": lambda *t: A.sdpa_rel_pos_conformer(t[0], t[1][:, :2], t[2][:, :2], *t[6:9]),
        "sdpa_decode_sink": lambda *t: A.sdpa_decode_sink(t[0][:, :, 0], t[1][:, :2], t[2][:, :2], t[9], t[10],
                                                          window=10),
    }
    args = (q, k, v, mask, seg_start, seg_len, rel, u, w, sinks, lens)
    ops.reset_placements()
    for op, call in calls.items():
        out = call(*args)
        with ops.backend("torch"):
            ref = call(*(a.cpu() for a in args))
        assert scaled_max_error(out, ref) <= TOL, op
    placed = {(op, where) for op, where, _, _ in ops.placements()}
    expected = "triton" if dev == "cuda" else "torch"
    assert {(op, expected) for op in calls} <= placed, placed
