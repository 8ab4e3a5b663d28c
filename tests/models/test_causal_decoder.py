"""The causal decoder against a plain PyTorch composition of the same layers in float64, and its causality."""
import math

import pytest
import torch
import torch.nn.functional as F

from tilewave.errors import WeightsError
from tilewave.spec.tolerance import tolerance
from tilewave.models.vocoders.causal_decoder import CausalDecoder, CausalDecoderConfig, random_state_dict

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
SMALL = CausalDecoderConfig(latent_dim=16, channels=32, rates=(2, 3), dilations=(1, 3, 9), kernel_size=7)


def reference(config, state, z):
    """Written from the definition: left zero padding for convs, right overhang trimmed for transposed convs."""
    s = {k: v.double() for k, v in state.items()}

    def snake(name, x):
        a, b = s[f"{name}.alpha"].exp().view(-1, 1), s[f"{name}.beta"].exp().view(-1, 1)
        return x + torch.sin(a * x) ** 2 / (b + 1e-9)

    def causal_conv(name, x, d=1):
        w = s[f"{name}.weight"]
        return F.conv1d(F.pad(x, (d * (w.shape[-1] - 1), 0)), w, s[f"{name}.bias"], dilation=d)

    x = causal_conv("conv_in", z.double())
    for b, r in enumerate(config.rates):
        x = snake(f"blocks.{b}.snake", x)
        L = x.shape[-1]
        x = F.conv_transpose1d(x, s[f"blocks.{b}.up.weight"], s[f"blocks.{b}.up.bias"], stride=r)[..., : L * r]
        for u, d in enumerate(config.dilations):
            p = f"blocks.{b}.res.{u}"
            x = x + causal_conv(f"{p}.conv2", snake(f"{p}.snake2", causal_conv(f"{p}.conv1", snake(f"{p}.snake1", x), d)))
    return causal_conv("conv_out", snake("snake_out", x))


def test_matches_plain_pytorch_in_float64():
    state = random_state_dict(SMALL, seed=1)
    z = torch.randn(2, 16, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    expected = reference(SMALL, state, z)
    out = CausalDecoder.from_state_dict(SMALL, state, dtype=torch.float64)(z)
    assert out.shape == (2, 1, 9 * 6) == expected.shape and out.dtype == torch.float64
    assert (out - expected).abs().max() <= 1e-9 * expected.abs().max()


@pytest.mark.parametrize("device", DEVICES)
def test_float32_matches_float64_reference(device):
    state = random_state_dict(SMALL, seed=1)
    z = torch.randn(2, 16, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    expected = reference(SMALL, state, z)
    out = CausalDecoder.from_state_dict(SMALL, state, device=device)(z.float().to(device))
    assert out.dtype == torch.float32
    assert (out.double().cpu() - expected).abs().max() <= tolerance("float32", "reduction") * expected.abs().max()


def test_output_depends_on_past_latents_only():
    model = CausalDecoder.random(SMALL, seed=3, dtype=torch.float64)
    z = torch.randn(1, 16, 12, dtype=torch.float64)
    y = model(z)
    for t in (0, 5, 11):
        bumped = z.clone()
        bumped[..., t] += 1.0
        diff = (model(bumped) - y).abs()[0, 0]
        assert (diff[: t * 6] == 0).all(), f"samples before latent frame {t} changed"
        assert diff[t * 6: (t + 1) * 6].max() > 0


def test_seed_shape_lengths():
    """The seed decoder's rates: 124 latent frames -> 59,520 samples (x480), channels halving four times."""
    config = CausalDecoderConfig(latent_dim=8, channels=32)
    assert config.hop == 480 and [config.block_channels(b) for b in range(-1, 4)] == [32, 16, 8, 4, 2]
    assert CausalDecoderConfig().block_channels(3) == 96
    assert CausalDecoder.random(config)(torch.randn(1, 8, 124)).shape == (1, 1, 59520)


def test_profile_op_types():
    names = []

    class Recorder:
        def stage(self, name):
            import contextlib

            names.append(name)
            return contextlib.nullcontext()

    CausalDecoder.random(SMALL)(torch.randn(1, 16, 4), profiler=Recorder())
    per_block = len(SMALL.dilations)
    assert names.count("block1/conv") == 2 * per_block and names.count("block1/act") == 1 + 2 * per_block
    assert names.count("block0/conv_transpose") == 1 and {n.split("/")[0] for n in names} == {
        "conv_in", "block0", "block1", "out"}


def test_state_dict_checks():
    state = random_state_dict(SMALL)
    state["blocks.1.res.2.conv1.weight"] = state["blocks.1.res.2.conv1.weight"][:, :, :5]
    with pytest.raises(WeightsError, match=r"blocks\.1\.res\.2\.conv1\.weight.*\[8, 8, 5\].*\[8, 8, 7\]"):
        CausalDecoder.from_state_dict(SMALL, state)
    state = random_state_dict(SMALL)
    del state["snake_out.beta"]
    with pytest.raises(WeightsError, match="snake_out.beta"):
        CausalDecoder.from_state_dict(SMALL, state)
    assert math.prod(SMALL.rates) == SMALL.hop == 6
