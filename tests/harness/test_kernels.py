"""The pytest bridge: every registered kernel case, on the interpreter (CPU) or the GPU."""
import pytest

from tests.conftest import KERNEL_DEVICE
from tilewave.harness.catalogue import load_all_kernels
from tilewave.spec import REGISTRY
from tilewave.harness.runner import default_seed, iter_cases, run_case

load_all_kernels()
SEED = default_seed()
MODELS = {"kokoro", "bigvgan", "causal_decoder"}
CASES = list(iter_cases(REGISTRY.select(None), KERNEL_DEVICE))


def test_registry_is_populated():
    assert len(REGISTRY) > 0, "no kernels registered"
    assert CASES, f"no kernel test cases for device {KERNEL_DEVICE}"


@pytest.mark.parametrize("kernel", list(REGISTRY), ids=lambda k: k.name)
def test_kernel_is_fully_declared(kernel):
    assert kernel.cases and kernel.bench, f"{kernel.name} needs test cases and bench shapes"
    assert any("cpu" in c.devices for c in kernel.cases), f"{kernel.name} has no interpreter case"
    assert any("cuda" in c.devices for c in kernel.cases), f"{kernel.name} has no GPU case"
    assert kernel.variants is not None, f"{kernel.name} declares no AOT compile variants"
    assert kernel.used_by is not None, f"{kernel.name} does not say which models use it (used_by=() if none)"
    assert set(kernel.used_by) <= MODELS, f"{kernel.name}: used_by names {set(kernel.used_by) - MODELS}, not a model"
    for b in kernel.bench:
        assert b.bytes(b.params, 4) > 0, f"{kernel.name}/{b.label}: bytes moved must be declared"


@pytest.mark.parametrize("kernel,index,dtype", CASES,
                         ids=[f"{k.name}-{d}-{k.cases[i].label}" for k, i, d in CASES])
def test_kernel_case(kernel, index, dtype):
    result = run_case(kernel, index, dtype, KERNEL_DEVICE, SEED)
    assert result.passed, f"{result.line()} (TILEWAVE_SEED={SEED} reproduces)"
