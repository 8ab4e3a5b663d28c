"""The batched LSTM kernel against the float64 oracle (its registered cases), and the ops' batched CPU path
against torch's packed LSTM. On the CPU the kernel runs on the Triton interpreter (one program per direction)."""
import pytest
import torch

from tests.conftest import KERNEL_DEVICE
from tilewave.harness.catalogue import load_all_kernels
from tilewave.harness.runner import run_case
from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import lstm_batched as KB
from tilewave.kernels import rnn as K
from tilewave.ops import rnn as ops
from tilewave.reference.rnn import lstm_torch_flat

KERNEL = load_all_kernels()["lstm_batched"]
CASES = [i for i, c in enumerate(KERNEL.cases) if KERNEL_DEVICE in c.devices]


@pytest.mark.parametrize("index", CASES, ids=[KERNEL.cases[i].label for i in CASES])
def test_batched_lstm_matches_the_float64_oracle(index):
    r = run_case(KERNEL, index, "float32", KERNEL_DEVICE, 0)
    assert r.error is None, r.error
    assert r.max_err <= r.tol, f"max error {r.max_err:.2e} > {r.tol:.0e}"


def test_each_item_starts_its_backward_direction_at_its_own_last_step():
    # an item alone and the same item in a batch beside a longer one give the same output
    g = torch.Generator().manual_seed(4)
    I, H = 12, 16
    w = [torch.empty(2, *s).uniform_(-0.25, 0.25, generator=g) for s in ((4 * H, I), (4 * H, H), (4 * H,), (4 * H,))]
    x = torch.randn(2, 9, I, generator=g)
    x[1, 4:] = torch.randn(5, I, generator=g) * 100  # what lies past item 1's length must not matter
    lengths = torch.tensor([9, 4])
    dev = lambda t: t.to(KERNEL_DEVICE)  # noqa: E731
    both = KB.lstm_batched(dev(x), *map(dev, w), lengths=dev(lengths))
    alone = KB.lstm_batched(dev(x[1:2, :4]), *map(dev, w))
    assert torch.isfinite(both).all()
    assert scaled_max_error(both[1, :4], alone[0]) <= tolerance("float32", "recurrence")
    assert torch.equal(both[1, 4:].cpu(), torch.zeros(5, 2 * H))


@pytest.mark.parametrize("block_b", [16, 1], ids=["16-row dots", "rows one at a time"])
def test_each_row_of_a_batch_is_bit_identical_to_its_item_alone_in_one_form(block_b):
    # Inputs whose projection W_ih x + b is exact in float32 (small integers times powers of two), so the
    # input GEMM's summation order cannot differ between the calls and only the kernel is compared. The plan
    # steps a few items a row at a time and more as dots (ROWS_MAX_B): in either form a row's arithmetic is its own.
    g = torch.Generator().manual_seed(5)
    I, H = 8, 16
    exact = lambda *s: torch.randint(-4, 5, s, generator=g).float() / 16  # noqa: E731
    w = [exact(2, 4 * H, I), exact(2, 4 * H, H), exact(2, 4 * H), exact(2, 4 * H)]
    x = torch.randint(-3, 4, (3, 7, I), generator=g).float()
    lengths = torch.tensor([7, 3, 5])
    dev = lambda t: t.to(KERNEL_DEVICE)  # noqa: E731
    plan = KB.plan_lstm_batched(3, H, 2, torch.device(KERNEL_DEVICE))[:3] + (block_b,)
    both = KB.lstm_batched(dev(x), *map(dev, w), lengths=dev(lengths), plan=plan).cpu()
    for b, n in enumerate(lengths.tolist()):
        alone = KB.lstm_batched(dev(x[b:b + 1, :n]), *map(dev, w), plan=plan).cpu()
        assert torch.equal(both[b, :n], alone[0]), f"row {b}"


def test_the_plan_steps_a_few_items_a_row_at_a_time_and_more_as_dots():
    dev = torch.device(KERNEL_DEVICE)
    for precision, most in KB.ROWS_MAX_B.items():
        assert KB.plan_lstm_batched(most, 256, 2, dev, precision)[3] == 1
        assert KB.plan_lstm_batched(most + 1, 256, 2, dev, precision)[3] == KB.MIN_DOT


def test_bad_precision_and_backward_only_are_refused():
    x, w = torch.randn(2, 3, 8), [torch.randn(1, 64, 8), torch.randn(1, 64, 16), torch.randn(1, 64), torch.randn(1, 64)]
    with pytest.raises(ValueError, match="precision must be one of"):
        KB.lstm_batched(x, *w, precision="fast")
    with pytest.raises(ValueError, match="backward-only"):
        KB.lstm_batched(x, *w, reverse=True)


def test_the_ops_batched_cpu_path_is_torchs_packed_lstm():
    g = torch.Generator().manual_seed(7)
    I, H = 10, 12
    dirs = [tuple(torch.empty(*s).uniform_(-0.3, 0.3, generator=g) for s in ((4 * H, I), (4 * H, H), (4 * H,), (4 * H,)))
            for _ in range(2)]
    x, lengths = torch.randn(3, 8, I, generator=g), torch.tensor([8, 1, 5])
    got = ops.lstm(x, dirs, lengths)
    want = lstm_torch_flat(x, [t for d in dirs for t in d], True, lengths)
    assert scaled_max_error(got, want) <= tolerance("float32", "recurrence")
    assert torch.equal(got[1, 1:], torch.zeros(7, 2 * H))


@pytest.mark.parametrize("block_b", [16, 1], ids=["a 16-row dot", "rows one at a time"])
def test_a_split_plan_maps_gate_columns_to_units(block_b):
    # the GPU's split (programs of 4 units each) on one step, which the interpreter can run without a barrier;
    # in both of the step's forms (module doc: ROWS_MAX_B)
    g = torch.Generator().manual_seed(9)
    I, H = 8, 24
    w = [torch.empty(2, *s).uniform_(-0.3, 0.3, generator=g) for s in ((4 * H, I), (4 * H, H), (4 * H,), (4 * H,))]
    x = torch.randn(3, 1, I, generator=g)
    dev = lambda t: t.to(KERNEL_DEVICE)  # noqa: E731
    got = KB.lstm_batched(dev(x), *map(dev, w), plan=(6, 4, 32, block_b))
    want = K.lstm_oracle(x.double(), *(t.double() for t in w))
    assert scaled_max_error(got, want) <= tolerance("float32", "recurrence")
