"""The linear op: where its products run (exact float32 on cuBLAS, the float32-class modes and 16-bit on the
kernel), and its PyTorch path equal to the layer's unfused ops bit for bit (the CPU's and exact float32's
result must not move when a model calls the op instead of nn.Linear). The kernel branch against this path:
tests/ops/test_triton_paths.py; the kernel against its float64 oracle: its registered cases."""
import pytest
import torch
import torch.nn.functional as F

from tilewave import precision
from tilewave.ops import activation, linear


def _inputs(seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x, w = torch.randn(3, 11, 24, generator=g), torch.randn(40, 24, generator=g) * 24 ** -0.5
    b, r = torch.randn(40, generator=g), torch.randn(3, 11, 40, generator=g)
    return [t.to(dtype) for t in (x, w, b, r)]


@pytest.mark.parametrize("act, residual", [("none", False), ("gelu_tanh", False), ("none", True),
                                           ("gelu_tanh", True)])
def test_the_pytorch_path_is_the_unfused_layer(act, residual):
    x, w, b, r = _inputs(1)
    y = F.linear(x, w, b)
    y = activation.gelu_tanh(y) if act == "gelu_tanh" else y
    want = r + y if residual else y
    with precision.scope("tf32x3"):
        got = linear.linear(x, w, b, act=act, residual=r if residual else None)
    assert torch.equal(got, want) and got.abs().max() > 0.1


def test_where_the_products_run():
    x, w, b, r = _inputs(2)
    assert linear._covered(x, w, b, r) == (False, "exact float32 products: cuBLAS")  # outside a scope: 'ieee'
    for mode in ("tf32x3", "tf32"):
        with precision.scope(mode):
            assert linear._covered(x, w, b, r) == (True, "")
    xb, wb, bb, rb = _inputs(2, torch.bfloat16)
    assert linear._covered(xb, wb, bb, rb) == (True, "")  # 16-bit: the tensor cores in any mode
    with precision.scope("tf32x3"):
        assert not linear._covered(x, wb, b, r)[0]
        assert linear._covered(x.transpose(1, 2).contiguous().transpose(1, 2), w, b, r) == (False, "a strided last axis")


def test_an_unknown_activation_is_refused_with_the_choices():
    x, w, b, _ = _inputs(3)
    with pytest.raises(ValueError, match="'none' or 'gelu_tanh', got 'relu'"):
        linear.linear(x, w, b, act="relu")
