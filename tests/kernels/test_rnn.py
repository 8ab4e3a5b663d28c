"""The LSTM kernels against torch.nn.LSTM / nn.LSTMCell with the same weights.

On the CPU these run on the Triton interpreter (one program at a time, so the launcher takes the
single-program-per-direction path); on a GPU they run for real, including the multi-program path with
its atomic barrier. Shapes differ by device where the interpreter would take minutes.
"""
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tests.conftest import KERNEL_DEVICE
from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import activation as A
from tilewave.kernels import norm as N
from tilewave.kernels import rnn as K
from tilewave.ops import rnn as ops
from tilewave.ops.dispatch import placements, reset_placements

TOL = tolerance("float32", "recurrence")
ON_GPU = KERNEL_DEVICE == "cuda"


def _module(I, H, bidirectional, seed):
    torch.manual_seed(seed)
    return torch.nn.LSTM(I, H, batch_first=True, bidirectional=bidirectional)


def _stacked(m: torch.nn.LSTM, directions=("",)):
    names = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
    return [torch.stack([getattr(m, n + sfx).detach() for sfx in directions]).to(KERNEL_DEVICE) for n in names]


def _reference(m, x, lengths):
    with torch.no_grad():
        if lengths is None:
            return m(x)[0]
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        return pad_packed_sequence(m(packed)[0], batch_first=True, total_length=x.shape[1])[0]


def _check(out, ref):
    assert torch.isfinite(out).all(), ("non-finite LSTM output (on a GPU the multi-program path writes NaN after "
                                       "a barrier timeout: were all its programs co-resident?)")
    err = scaled_max_error(out, ref)
    assert err <= TOL, f"max error {err:.2e} > {TOL:.0e}"


def _run_against_torch(B, T, I, H, mode, lengths=None, path=None, seed=0):
    """mode: 'forward', 'reverse' (backward direction only) or 'bidirectional'."""
    m = _module(I, H, mode != "forward", seed)
    x = torch.randn(B, T, I, generator=torch.Generator().manual_seed(seed + 1))
    ref = _reference(m, x, lengths)
    if mode == "reverse":
        # torch has no backward-only LSTM: the backward half of a bidirectional one is the reference
        weights, ref = _stacked(m, ("_reverse",)), ref[..., H:]
    else:
        weights = _stacked(m, ("", "_reverse") if mode == "bidirectional" else ("",))
    lens = None if lengths is None else lengths.to(KERNEL_DEVICE)
    out = K.lstm(x.to(KERNEL_DEVICE), *weights, lengths=lens, reverse=mode == "reverse", path=path)
    _check(out, ref)
    return out


def test_lstm_hidden_256_input_640_bidirectional_65_tokens():
    _run_against_torch(1, 65, 640, 256, "bidirectional")


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("with_lengths", [False, True])
def test_lstm_directions_and_lengths(mode, with_lengths):
    B, T = 3, 23
    lengths = torch.tensor([17, 23, 4]) if with_lengths else None
    out = _run_against_torch(B, T, 19, 24, mode, lengths, seed=5)
    if with_lengths:
        for b, n in enumerate(lengths.tolist()):
            assert (out[b, n:] == 0).all(), f"padded steps of row {b} must be exactly zero"


@pytest.mark.parametrize("path", ["resident", "streaming"])
def test_lstm_both_launch_paths_agree_with_torch(path):
    # Hidden 40 is not a power of two: masked units and K lanes in both paths.
    _run_against_torch(2, 12, 33, 40, "bidirectional", torch.tensor([12, 7]), path=path, seed=9)


def test_lstm_frame_rate_sequence_of_more_than_1000_steps():
    if ON_GPU:  # Kokoro's shared BiLSTM at frame rate
        _run_against_torch(2, 1600, 640, 256, "bidirectional", torch.tensor([1600, 1234]), seed=13)
    else:  # one direction, small hidden: the interpreter costs ~20 ms per step
        _run_against_torch(2, 1000, 8, 16, "reverse", torch.tensor([1000, 777]), seed=13)


def test_lstm_after_hundreds_of_other_launches():
    # A downstream engine saw a NaN from its LSTM only after many earlier launches: recycled, dirty
    # allocator blocks or stale state surface then. Fill freed blocks with NaN, launch other kernels a few
    # hundred times, then check the LSTM still matches torch exactly as it does standalone.
    gen = torch.Generator().manual_seed(21)
    for n in (1 << 10, 1 << 14, 1 << 18):
        junk = torch.full((n,), float("nan"), device=KERNEL_DEVICE)
        del junk
    x = torch.randn(2, 4, 300, generator=gen).to(KERNEL_DEVICE)
    g = torch.randn(2, 4, generator=gen).to(KERNEL_DEVICE)
    for i in range(100):
        y = N.adain1d(x, g, g)
        y = A.leaky_relu(y, 0.2)
        y = N.layer_norm(y.transpose(1, 2).contiguous())
    assert torch.isfinite(y).all()
    H = 256 if ON_GPU else 24
    _run_against_torch(3, 80 if ON_GPU else 20, 64, H, "bidirectional", torch.tensor([80 if ON_GPU else 20, 5, 11]),
                       seed=17)


def test_lstm_cell_matches_torch_lstm_cell():
    torch.manual_seed(3)
    B, I, H = (4, 640, 256) if ON_GPU else (3, 40, 24)
    cell = torch.nn.LSTMCell(I, H)
    gen = torch.Generator().manual_seed(4)
    x, h, c = torch.randn(B, I, generator=gen), torch.randn(B, H, generator=gen), torch.randn(B, H, generator=gen)
    with torch.no_grad():
        ref_h, ref_c = cell(x, (h, c))
    params = [p.detach().to(KERNEL_DEVICE) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]
    out_h, out_c = K.lstm_cell(*(t.to(KERNEL_DEVICE) for t in (x, h, c)), *params)
    _check(out_h, ref_h)
    _check(out_c, ref_c)


def test_lstm_op_routes_to_the_kernel_on_cuda_and_supports_lengths():
    m = _module(20, 24, True, 31)
    x = torch.randn(3, 15, 20, generator=torch.Generator().manual_seed(32))
    lengths = torch.tensor([15, 9, 3])
    ref = _reference(m, x, lengths)
    directions = [tuple(getattr(m, n + sfx).detach().to(KERNEL_DEVICE)
                        for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")) for sfx in ("", "_reverse")]
    reset_placements()
    out = ops.lstm(x.to(KERNEL_DEVICE), directions, lengths=lengths)
    _check(out, ref)
    where = "triton" if ON_GPU else "torch"
    assert any(op == "lstm" and w == where for op, w, _, _ in placements()), placements()


def test_plan_splits_hidden_256_over_16_programs_on_the_gpu_and_one_in_the_interpreter():
    plan = K.plan_lstm(1, 256, 2, torch.device(KERNEL_DEVICE))
    assert plan.path == "resident"
    if ON_GPU:
        assert (plan.nsplit, plan.units) == (16, 16), plan
        assert K.plan_lstm(1, 2048, 2, torch.device("cuda")).path == "streaming"
    else:
        assert plan.nsplit == 1, "a cross-program barrier would deadlock the interpreter"


def test_lstm_rejects_half_precision_and_bad_lengths():
    w = [t.to(KERNEL_DEVICE) for t in (torch.randn(1, 16, 3), torch.randn(1, 16, 4), torch.randn(1, 16), torch.randn(1, 16))]
    x = torch.randn(1, 5, 3, device=KERNEL_DEVICE)
    with pytest.raises(ValueError, match="float32 only"):
        K.lstm(x.half(), *w)
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, T=5\]"):
        K.lstm(x, *w, lengths=torch.tensor([6]))


@pytest.mark.parametrize("T", [1] if not ON_GPU else [1, 40])
def test_lstm_resident_split_over_programs_with_a_partial_last_slice(T):
    # Hidden 30 over 4 programs of 8 units: the last program owns units 24..31, two of them masked.
    # In the interpreter only T = 1 can run (no barrier is crossed): that checks each program's slice of
    # the gates, c and h; W_hh (multiplied by h_{-1} = 0 there) and the barrier need the GPU's 40 steps.
    plan = K.LstmPlan("resident", nsplit=4, units=8, block_k=32, block_b=2)
    m = _module(11, 30, True, 41)
    x = torch.randn(3, T, 11, generator=torch.Generator().manual_seed(42))
    out = K.lstm(x.to(KERNEL_DEVICE), *_stacked(m, ("", "_reverse")), lengths=torch.tensor([T, 1, T]).to(KERNEL_DEVICE),
                 path=plan)
    _check(out, _reference(m, x, torch.tensor([T, 1, T])))
