"""The harness must be able to fail: a broken kernel, an unwritten output and an empty registry all fail."""
import pytest
import torch
import triton
import triton.language as tl

from tests.conftest import KERNEL_DEVICE
from tilewave.harness.catalogue import load_all_kernels
from tilewave.harness.runner import run_tests
from tilewave.kernels import activation as A
from tilewave.spec import REGISTRY, Case, Kernel, Registry

load_all_kernels()


@triton.jit
def _leaky_relu_off_by_one(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - 1  # the bug: the last element is never written
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, tl.where(x > 0, x, x * slope).to(y_ptr.dtype.element_ty), mask=mask)


def _broken_launch(x, slope, out):
    _leaky_relu_off_by_one[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), slope, BLOCK=128)
    return out


def _with_launch(name, launch, **changes):
    good = REGISTRY[name]
    return Kernel(**{**good.__dict__, "launch": launch, **changes})


def _run(kernel):
    reg = Registry()
    reg.register(kernel)
    return run_tests(reg, None, KERNEL_DEVICE, base_seed=1, echo=lambda *_: None)


def test_off_by_one_mask_fails():
    results = _run(_with_launch("leaky_relu", _broken_launch))
    assert results and not any(r.passed for r in results)


def test_unwritten_output_fails():
    results = _run(_with_launch("gelu_erf", lambda x, out: out))  # writes nothing: NaN poison stays
    assert results and all(r.max_err == float("inf") and not r.passed for r in results)


def test_wrong_formula_fails():
    # the sigmoid approximation of GELU instead of the exact erf form (off by up to ~2e-2).
    def approx(x, out):
        out.copy_((x.float() * torch.sigmoid(1.702 * x.float())).to(out.dtype))
        return out
    results = _run(_with_launch("gelu_erf", approx, dtypes=("float32",),
                                cases=[Case({"shape": (4, 1000)}, devices=("cpu", "cuda"))]))
    assert results and not any(r.passed for r in results)


def test_empty_registry_fails():
    with pytest.raises(RuntimeError, match="empty"):
        run_tests(Registry(), None, KERNEL_DEVICE)


def test_empty_selection_fails():
    with pytest.raises(RuntimeError, match="no test cases"):
        run_tests(REGISTRY, "no-such-kernel-anywhere", KERNEL_DEVICE)


def test_registry_rejects_kernel_without_cases():
    with pytest.raises(ValueError, match="at least one test case"):
        Registry().register(_with_launch("gelu_erf", A.gelu_erf, cases=[]))
