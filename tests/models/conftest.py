"""Kokoro weights are dequantized once per session (about 10 s on one core) and shared by the tests."""
import pytest
import torch

from tilewave.models.kokoro import KokoroModel
from tilewave.models.kokoro import weights as W

# The GPU machine runs the same parity on CUDA; the CUDA case is marked so that CI can deselect it.
DEVICES = ["cpu"] + ([pytest.param("cuda", marks=pytest.mark.cuda)] if torch.cuda.is_available() else [])


@pytest.fixture(scope="session")
def kokoro_weights():
    return W.load_weights(None, KokoroModel.expected_shapes())


@pytest.fixture(scope="session")
def official_pth(kokoro_weights, tmp_path_factory):
    return W.save_official_layout(kokoro_weights, tmp_path_factory.mktemp("kokoro") / "kokoro-dequantized.pth")


@pytest.fixture(scope="session")
def kokoro_cpu(kokoro_weights):
    return KokoroModel.from_weights(kokoro_weights, "cpu")


def own_copy(weights: dict[str, torch.Tensor]) -> KokoroModel:
    """A CPU model on copies of the weights, for a test that changes parameters in place."""
    return KokoroModel.from_weights({k: v.clone() for k, v in weights.items()}, "cpu")


@pytest.fixture(autouse=True)
def shared_weights_stay_as_loaded(request):
    """A model takes a dict's tensors themselves (assign=True), so an in-place change to kokoro_cpu's parameters
    changes the session's weights for every later test in the worker (and the official model saved before it no
    longer matches them: a parity failure far from its cause). Version counters see any such change."""
    if "kokoro_weights" not in request.fixturenames:
        yield
        return
    weights = request.getfixturevalue("kokoro_weights")
    before = {k: v._version for k, v in weights.items()}
    yield
    changed = [k for k, v in weights.items() if v._version != before[k]]
    assert not changed, f"the test changed the shared weights in place ({', '.join(changed[:3])}): use own_copy"


@pytest.fixture(scope="session", autouse=True)
def float32_references():
    """Parity is defined in float32: on a GPU the official model's cuDNN convs and LSTMs would otherwise use
    TF32 (PyTorch's default for cuDNN), ~1e-3 relative, and the reference would be the less exact side."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
