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


@pytest.fixture(scope="session", autouse=True)
def float32_references():
    """Parity is defined in float32: on a GPU the official model's cuDNN convs and LSTMs would otherwise use
    TF32 (PyTorch's default for cuDNN), ~1e-3 relative, and the reference would be the less exact side."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
