"""Properties of the normalisation kernels that the registry's random cases cannot express."""
import pytest
import torch

from tests.conftest import KERNEL_DEVICE
from tilewave.reference.norm import adain_activation
from tilewave.spec.tolerance import dtype_name, scaled_max_error, tolerance
from tilewave.kernels import norm as K
from tilewave.ops import norm as ops
from tilewave.ops.dispatch import placements, reset_placements

TOL = tolerance("float32", "reduction")


def _oracle_inputs(*tensors):
    return [t.detach().cpu().double() for t in tensors]


def test_adain1d_near_constant_channel_is_finite_where_naive_variance_goes_negative():
    gen = torch.Generator().manual_seed(7)
    B, C, L = 1, 16, 7900
    x = 1000.0 + 1e-4 * torch.randn(B, C, L, generator=gen)
    # The trap is real on these inputs: single-pass float32 E[x^2] - E[x]^2 is negative on some rows.
    naive = (x * x).mean(-1) - x.mean(-1) ** 2
    assert (naive < 0).any(), f"test input does not reproduce the negative variance: {naive}"
    gamma = 1.0 + 0.1 * torch.randn(B, C, generator=gen)
    beta = 0.1 * torch.randn(B, C, generator=gen)
    x, gamma, beta = (t.to(KERNEL_DEVICE) for t in (x, gamma, beta))
    out = K.adain1d(x, gamma, beta)
    assert torch.isfinite(out).all()
    err = scaled_max_error(out, K.adain1d_oracle(*_oracle_inputs(x, gamma, beta)))
    assert err <= TOL, f"max error {err:.2e} > {TOL:.0e}"


def test_adain1d_with_lengths_gives_each_item_its_solo_result_bit_for_bit_and_zeros_past_it():
    gen = torch.Generator().manual_seed(3)
    B, C, L = 3, 5, 9000  # > one 8,192-frame chunk, so the chunked statistics are exercised
    x = (torch.randn(B, C, L, generator=gen) * 2 + torch.randn(B, C, 1, generator=gen) * 3).to(KERNEL_DEVICE)
    gamma, beta = (torch.randn(B, C, generator=gen).to(KERNEL_DEVICE) for _ in range(2))
    lengths = torch.tensor([L, 8193, 1], device=KERNEL_DEVICE)
    out = K.adain1d(x, gamma, beta, lengths=lengths)
    for b, n in enumerate(lengths.tolist()):
        solo = K.adain1d(x[b:b + 1, :, :n].contiguous(), gamma[b:b + 1], beta[b:b + 1])
        assert torch.equal(out[b:b + 1, :, :n], solo), f"item {b}: not its solo result"
        assert torch.equal(out[b, :, n:], torch.zeros_like(out[b, :, n:])), f"item {b}: nonzero past its length"
    ref = K.adain1d_oracle(*_oracle_inputs(x, gamma, beta), lengths=lengths.cpu())
    assert scaled_max_error(out, ref) <= TOL


@pytest.mark.parametrize("act", ["none", "snake", "leaky_relu"])
def test_adain1d_rows_and_split_forms_give_the_same_bits_solo_and_batched(act):
    # the split form (two launches over (row, chunk)) and the row form gather the same chunk moments and combine
    # them alike: a row's bits do not depend on the form, so a padded batch may take either while its items' solo
    # runs take the other
    gen = torch.Generator().manual_seed(5)
    B, C, L = 3, 4, 17000  # three chunks
    x = (torch.randn(B, C, L, generator=gen) * 2 + torch.randn(B, C, 1, generator=gen) * 3).to(KERNEL_DEVICE)
    gamma, beta = (torch.randn(B, C, generator=gen).to(KERNEL_DEVICE) for _ in range(2))
    kw = dict(act=act, alpha=(0.5 + torch.rand(C, generator=gen)).to(KERNEL_DEVICE), slope=0.2)
    rows, split = (K.adain1d(x, gamma, beta, split=f, **kw) for f in (False, True))
    assert torch.isfinite(rows).all() and torch.equal(rows, split)
    lengths = torch.tensor([L, 8193, 5000], device=KERNEL_DEVICE)  # 3, 2 and 1 chunks
    batched = K.adain1d(x, gamma, beta, lengths=lengths, split=True, **kw)
    for b, n in enumerate(lengths.tolist()):
        solo = K.adain1d(x[b:b + 1, :, :n].contiguous(), gamma[b:b + 1], beta[b:b + 1], split=False, **kw)
        assert torch.equal(batched[b:b + 1, :, :n], solo), f"item {b}: the split batch is not its solo row form"
        assert not batched[b, :, n:].any()


@pytest.mark.parametrize("act", ["snake", "leaky_relu"])
def test_adain1d_with_its_activation_fused_matches_the_two_ops_and_float64(act):
    # the fused pass skips the 16-bit rounding between AdaIN and the activation: within one rounding of the
    # two-op path, and within the reduction tolerance of float64
    gen = torch.Generator().manual_seed(8)
    B, C, L = 2, 6, 9000
    x = (torch.randn(B, C, L, generator=gen) * 2 + torch.randn(B, C, 1, generator=gen) * 3).to(KERNEL_DEVICE)
    gamma, beta = (torch.randn(B, C, generator=gen).to(KERNEL_DEVICE) for _ in range(2))
    alpha = (0.5 + torch.rand(C, generator=gen)).to(KERNEL_DEVICE)
    for dtype in (torch.float32, torch.bfloat16):
        xd = x.to(dtype)
        fused = K.adain1d(xd, gamma, beta, act=act, alpha=alpha, slope=0.2)
        two = adain_activation(K.adain1d(xd, gamma, beta), act, alpha, 0.2)
        bound = tolerance(dtype_name(dtype), "reduction")
        assert fused.dtype == dtype and torch.isfinite(fused).all()
        assert scaled_max_error(fused, two) <= bound
        ref = K.adain1d_oracle(*_oracle_inputs(xd, gamma, beta), act=act, alpha=alpha.cpu().double(), slope=0.2)
        assert scaled_max_error(fused, ref) <= bound, dtype


def test_adain1d_rejects_a_bad_activation_and_rows_past_its_chunks():
    x = torch.randn(1, 2, 10, device=KERNEL_DEVICE)
    g = torch.ones(1, 2, device=KERNEL_DEVICE)
    with pytest.raises(ValueError, match="act must be one of"):
        K.adain1d(x, g, g, act="relu")
    with pytest.raises(ValueError, match="needs alpha"):
        K.adain1d(x, g, g, act="snake")
    with pytest.raises(ValueError, match="one value per channel"):
        K.adain1d(x, g, g, act="snake", alpha=torch.ones(3, device=KERNEL_DEVICE))
    long = torch.empty(1, 1, K.ADAIN_MAX_CHUNKS * K.ADAIN_BLOCK + 1, device=KERNEL_DEVICE)
    with pytest.raises(ValueError, match="falls back"):
        K.adain1d(long, g[:, :1], g[:, :1])


def test_adain1d_long_row_with_large_offset_matches_float64():
    # 50,000 frames, mean 300, std 0.01: a one-pass float32 sum of x loses the variance entirely.
    gen = torch.Generator().manual_seed(11)
    x = (300.0 + 0.01 * torch.randn(2, 3, 50_000, generator=gen)).to(KERNEL_DEVICE)
    gamma = torch.rand(2, 3, generator=gen).add(0.5).to(KERNEL_DEVICE)
    beta = torch.randn(2, 3, generator=gen).to(KERNEL_DEVICE)
    out = K.adain1d(x, gamma, beta)
    err = scaled_max_error(out, K.adain1d_oracle(*_oracle_inputs(x, gamma, beta)))
    assert err <= TOL, f"max error {err:.2e} > {TOL:.0e}"


def test_adain1d_constant_row_gives_beta():
    x = torch.full((1, 2, 3000), 4.25, device=KERNEL_DEVICE)
    gamma = torch.tensor([[2.0, -1.0]], device=KERNEL_DEVICE)
    beta = torch.tensor([[0.5, -0.25]], device=KERNEL_DEVICE)
    out = K.adain1d(x, gamma, beta)
    assert torch.equal(out, beta[..., None].expand_as(x))


def test_norm_ops_route_to_the_kernels_on_cuda_and_agree_with_the_oracles():
    gen = torch.Generator().manual_seed(3)
    x3 = torch.randn(2, 5, 300, generator=gen).to(KERNEL_DEVICE)
    g, b = (torch.randn(2, 5, generator=gen).to(KERNEL_DEVICE) for _ in range(2))
    xt = torch.randn(2, 9, 96, generator=gen).to(KERNEL_DEVICE)
    w, bias = (torch.randn(96, generator=gen).to(KERNEL_DEVICE) for _ in range(2))
    ga, ba = (torch.randn(2, 96, generator=gen).to(KERNEL_DEVICE) for _ in range(2))
    reset_placements()
    results = {
        "adain1d": (ops.adain1d(x3, g, b), K.adain1d_oracle(*_oracle_inputs(x3, g, b))),
        "layer_norm": (ops.layer_norm(xt, w, bias), K.layer_norm_oracle(*_oracle_inputs(xt, w, bias))),
        "ada_layer_norm": (ops.ada_layer_norm(xt, ga, ba), K.ada_layer_norm_oracle(*_oracle_inputs(xt, ga, ba))),
    }
    where = "triton" if KERNEL_DEVICE == "cuda" else "torch"
    ran = {(op, w_) for op, w_, _, _ in placements()}
    for op, (out, ref) in results.items():
        assert (op, where) in ran, f"{op} did not run on {where}: {placements()}"
        assert scaled_max_error(out, ref) <= TOL, op


def test_layer_norm_rejects_rows_wider_than_the_register_tile():
    x = torch.randn(1, K.MAX_C + 1, device=KERNEL_DEVICE)
    with pytest.raises(ValueError, match="falls back"):
        K.layer_norm(x)


def test_adain1d_rejects_parameters_of_the_wrong_size():
    x = torch.randn(2, 3, 10, device=KERNEL_DEVICE)
    with pytest.raises(ValueError, match="one value per"):
        K.adain1d(x, torch.ones(2, 4, device=KERNEL_DEVICE), torch.zeros(2, 4, device=KERNEL_DEVICE))


def test_the_cpu_path_of_16bit_adain_and_snake_computes_in_float32_and_keeps_the_storage_dtype():
    # Kokoro's bfloat16 decoder: its AdaIN (statistics over a row) and snake get bfloat16 activations and
    # float32 parameters; the PyTorch path must do as the kernels do (float32 inside, x's dtype out)
    from tilewave.kernels import activation as KA
    from tilewave.ops import activation as act

    g = torch.Generator().manual_seed(4)
    x = (torch.randn(2, 6, 700, generator=g) * 2 + torch.randn(2, 6, 1, generator=g) * 3).to(torch.bfloat16)
    gamma, beta = 1 + 0.5 * torch.randn(2, 6, generator=g), 0.5 * torch.randn(2, 6, generator=g)
    alpha = 0.5 + torch.rand(6, generator=g)
    bound = tolerance("bfloat16", "pointwise")
    y = ops.adain1d(x, gamma, beta)
    assert y.dtype == torch.bfloat16
    assert scaled_max_error(y, K.adain1d_oracle(*_oracle_inputs(x, gamma, beta))) <= bound
    lengths = torch.tensor([700, 333])
    short = ops.adain1d(x, gamma, beta, lengths=lengths)
    assert short.dtype == torch.bfloat16 and not short[1, :, 333:].any()
    assert scaled_max_error(short[1:, :, :333],
                            K.adain1d_oracle(*_oracle_inputs(x[1:, :, :333], gamma[1:], beta[1:]))) <= bound
    s = act.snake(x, alpha)
    assert s.dtype == torch.bfloat16
    assert scaled_max_error(s, KA.snake_oracle(x.double(), alpha.double())) <= bound
