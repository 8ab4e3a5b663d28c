"""BigVGAN against NVIDIA's `bigvgan` package (2.4.1) with the same random weights, and its loader's errors."""
import json
import math
import pickle

import pytest
import torch

from tilewave.harness.references import import_official_bigvgan as load_reference
from tilewave.errors import InputError, WeightsError
from tilewave.spec.tolerance import tolerance
from tilewave.models.vocoders.bigvgan import BigVGAN, BigVGANConfig, load_config, random_state_dict
from tilewave.models.vocoders.layers import fold_weight_norm
from tilewave.ops import resample

# the reference package builds its convs with the deprecated torch.nn.utils.weight_norm
pytestmark = [pytest.mark.filterwarnings("ignore:.*weight_norm.*:FutureWarning"),
              pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
REF, _, AttrDict = load_reference()

# bigvgan_v2_24khz_100band_256x, as published
H_24K = dict(resblock="1", upsample_rates=[4, 4, 2, 2, 2, 2], upsample_kernel_sizes=[8, 8, 4, 4, 4, 4],
             upsample_initial_channel=1536, resblock_kernel_sizes=[3, 7, 11],
             resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5], [1, 3, 5]], use_tanh_at_final=False,
             use_bias_at_final=False, activation="snakebeta", snake_logscale=True, num_mels=100, n_fft=1024,
             hop_size=256, win_size=1024, sampling_rate=24000, fmin=0, fmax=None, segment_size=65536)
# the 22 kHz 80-band v1 layout (plain snake, linear-scale alpha, tanh and bias at the end) with AMP type 2
# and fewer channels, so that CI stays fast
H_22K_SMALL = dict(resblock="2", upsample_rates=[8, 8, 2, 2], upsample_kernel_sizes=[16, 16, 4, 4],
                   upsample_initial_channel=64, resblock_kernel_sizes=[3, 7, 11],
                   resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5], [1, 3, 5]], activation="snake",
                   snake_logscale=False, num_mels=80, n_fft=1024, hop_size=256, win_size=1024, sampling_rate=22050,
                   fmin=0, fmax=8000)
TOL = tolerance("float32", "pointwise")


def official(h, seed):
    """The package's generator with every parameter drawn at random (snake parameters and biases too)."""
    torch.manual_seed(seed)
    model = REF.BigVGAN(AttrDict(dict(h))).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("alpha", "beta")):
                p.copy_(torch.randn_like(p) * 0.3 if h["snake_logscale"] else 1 + torch.rand_like(p))
            elif name.endswith("bias"):
                p.normal_(0, 0.01)
            elif name.endswith("weight_g"):
                p.mul_(1 + 0.1 * torch.randn_like(p))
    return model


@pytest.fixture(scope="module")
def ref_24k():
    return official(H_24K, 0)


def relative_error(out, ref):
    return ((out.double().cpu() - ref.double()).abs().max() / ref.double().abs().max()).item()


@pytest.mark.parametrize("device", DEVICES)
def test_24khz_v2_matches_official(ref_24k, device):
    mel = torch.randn(2, 100, 4, generator=torch.Generator().manual_seed(1)) - 4
    with torch.no_grad():
        expected = ref_24k(mel)
    ours = BigVGAN.from_state_dict(BigVGANConfig.from_dict(H_24K), ref_24k.state_dict(), device=device)
    out = ours(mel.to(device))
    assert out.shape == (2, 1, 4 * 256)
    assert expected.abs().max() > 1e-3, "the reference output is ~0: the comparison would prove nothing"
    assert relative_error(out, expected) <= TOL


@pytest.mark.parametrize("device", DEVICES)
def test_22khz_snake_type2_matches_official(device):
    ref = official(H_22K_SMALL, 1)
    mel = torch.randn(1, 80, 5, generator=torch.Generator().manual_seed(2)) * 2 - 5
    with torch.no_grad():
        expected = ref(mel)
    ours = BigVGAN.from_state_dict(BigVGANConfig.from_dict(H_22K_SMALL), ref.state_dict(), device=device)
    out = ours(mel[0].to(device))  # an unbatched mel is accepted too
    assert out.shape == expected.shape
    assert relative_error(out, expected) <= TOL


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", ["snake", "snakebeta"])
@pytest.mark.parametrize("log_scale", [False, True])
def test_act1d_op_matches_official_activation1d(device, act, log_scale):
    from bigvgan import activations
    from bigvgan.alias_free_activation.torch.act import Activation1d

    C = 5
    cls = activations.SnakeBeta if act == "snakebeta" else activations.Snake
    module = Activation1d(cls(C, alpha_logscale=log_scale))
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in module.act.parameters():
            p.copy_(torch.randn(C, generator=gen) * 0.5 if log_scale else 0.2 + torch.rand(C, generator=gen))
    for L in (1, 3, 130, 1100, 4000):  # one tile with both row ends, then interior tiles too
        x = torch.randn(2, C, L, generator=gen) * 2
        with torch.no_grad():
            expected = module(x)
        beta = module.act.beta.data if act == "snakebeta" else None
        out = resample.act1d(x.to(device), module.act.alpha.data.to(device),
                             None if beta is None else beta.to(device), log_scale,
                             module.upsample.filter.to(device), module.downsample.lowpass.filter.to(device))
        assert (out.cpu() - expected).abs().max() <= TOL * max(1.0, expected.abs().max().item()), L


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16bit_generator_tracks_float32(device, dtype):
    config = BigVGANConfig.from_dict(H_22K_SMALL)
    state = random_state_dict(config, seed=8)
    mel = torch.randn(1, 80, 6, generator=torch.Generator().manual_seed(9)) - 4
    ref = BigVGAN.from_state_dict(config, state)(mel)
    out = BigVGAN.from_state_dict(config, state, device=device, dtype=dtype)(mel.to(device))
    assert out.dtype == dtype
    assert relative_error(out.float(), ref) <= tolerance(str(dtype).removeprefix("torch."), "reduction")



@pytest.mark.parametrize("device", DEVICES)
def test_act1d_time_major_op_holds_act1d_values(device):
    # the time-major form (the conv tap kernel's input) of act1d's output: its values, zeros around them
    g = torch.Generator().manual_seed(4)
    x, alpha, beta = torch.randn(2, 5, 40, generator=g), torch.randn(5, generator=g) * 0.3, torch.randn(5, generator=g)
    x, alpha, beta = x.to(device), alpha.to(device), beta.to(device)
    want = resample.act1d(x, alpha, beta, True)
    tm = resample.act1d(x, alpha, beta, True, time_major=(3, 50, 8))
    assert (tm.left, tm.channels, tm.length, tuple(tm.data.shape)) == (3, 5, 40, (2, 50, 8))
    assert torch.equal(tm.data[:, 3:43, :5], want.transpose(1, 2)) and want.abs().max() > 0.1
    inside = torch.zeros_like(tm.data, dtype=torch.bool)
    inside[:, 3:43, :5] = True
    assert not tm.data[~inside].any()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_time_major_inputs_change_no_bit(device, dtype):
    # the activations writing the convs' time-major input against the convs copying it (where a GPU's tap kernel
    # reads that form; on the CPU neither is time-major): the same audio to the bit
    config = BigVGANConfig.from_dict(H_22K_SMALL)
    mel = torch.randn(1, 80, 6, generator=torch.Generator().manual_seed(3)) - 4
    model = BigVGAN.from_state_dict(config, random_state_dict(config, seed=3), device=device, dtype=dtype)
    off = model.time_major_inputs(False)(mel.to(device))
    on = model.time_major_inputs(True)(mel.to(device))
    assert torch.isfinite(off).all() and off.abs().max() > 1e-3
    assert torch.equal(on, off)


def test_context_frames_bounds_the_receptive_field():
    """Changing mel frame t changes audio only within t +- context_frames frames (what chunking relies on)."""
    h = dict(H_22K_SMALL, upsample_rates=[4, 2], upsample_kernel_sizes=[8, 4], hop_size=8, upsample_initial_channel=8)
    model = BigVGAN.random(BigVGANConfig.from_dict(h), seed=4)
    ctx, hop, T, t = model.context_frames(), 8, 90, 45
    mel = torch.randn(1, 80, T, generator=torch.Generator().manual_seed(5))
    bumped = mel.clone()
    bumped[..., t] += 1.0
    diff = (model(bumped) - model(mel)).abs()[0, 0]
    changed = torch.nonzero(diff > 0).flatten()
    assert changed.numel() > 0
    assert changed.min() >= (t - ctx) * hop and changed.max() < (t + ctx + 1) * hop
    # and the bound is not vacuous: the change reaches beyond the frame itself
    assert changed.min() < t * hop - hop and changed.max() >= (t + 2) * hop


class RecordingProfiler:
    def __init__(self):
        self.names = []

    def stage(self, name):
        import contextlib

        self.names.append(name)
        return contextlib.nullcontext()


def test_profile_names_every_stage_and_op_type():
    cfg = BigVGANConfig.from_dict(H_22K_SMALL)
    prof = RecordingProfiler()
    BigVGAN.random(cfg)(torch.randn(1, 80, 3), profiler=prof)
    stages = {n.split("/")[0] for n in prof.names}
    ops = {n.split("/")[1] for n in prof.names}
    assert stages == {"conv_pre", "post"} | {f"stage{i}" for i in range(4)}
    assert ops == {"conv", "conv_transpose", "act"}
    # type 2: 3 resblocks x 3 convs per stage, each behind an activation
    assert prof.names.count("stage1/conv") == 9 and prof.names.count("stage1/act") == 9


# ---------------------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------------------
def save_checkpoint(folder, h, state):
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(h))
    torch.save({"generator": state}, folder / "bigvgan_generator.pt")
    return folder


def test_official_checkpoint_folder_loads(tmp_path):
    ref = official(H_22K_SMALL, 6)
    ref._save_pretrained(tmp_path)  # exactly what NVIDIA's checkpoints are: config.json + {'generator': ...}
    ours = BigVGAN.from_checkpoint(tmp_path)
    mel = torch.randn(1, 80, 3)
    with torch.no_grad():
        expected = ref(mel)
    assert relative_error(ours(mel), expected) <= TOL


def test_weight_norm_folding_keeps_zero_channels_zero():
    v = torch.randn(4, 3, 5)
    v[2] = 0
    g = torch.rand(4, 1, 1) + 0.5
    w = fold_weight_norm(g, v)
    assert torch.isfinite(w).all() and (w[2] == 0).all()
    expected = torch._weight_norm(v, g, 0)
    keep = [0, 1, 3]
    assert torch.allclose(w[keep], expected[keep], rtol=1e-6, atol=1e-7)


def test_parametrized_weight_norm_keys_load():
    conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(80, 64, 7))
    state = random_state_dict(BigVGANConfig.from_dict(H_22K_SMALL))
    del state["conv_pre.weight_g"], state["conv_pre.weight_v"]
    for k, v in conv.state_dict().items():
        state[f"conv_pre.{k}"] = v.detach()
    model = BigVGAN.from_state_dict(BigVGANConfig.from_dict(H_22K_SMALL), state)
    assert torch.allclose(model.params["conv_pre.weight"], conv.weight.detach(), rtol=1e-6, atol=1e-7)


@pytest.fixture
def good_state():
    return random_state_dict(BigVGANConfig.from_dict(H_22K_SMALL), seed=7)


def test_missing_parameter_is_named(tmp_path, good_state):
    del good_state["resblocks.4.convs.1.weight_v"]
    with pytest.raises(WeightsError, match=r"resblocks\.4\.convs\.1\.weight_v"):
        BigVGAN.from_checkpoint(save_checkpoint(tmp_path / "ck", H_22K_SMALL, good_state))


def test_wrong_shape_says_config_and_weights_disagree(tmp_path, good_state):
    with pytest.raises(WeightsError, match=r"conv_pre\.weight_g.*\[64, 1, 1\].*\[128, 1, 1\].*does not belong"):
        BigVGAN.from_checkpoint(save_checkpoint(tmp_path / "ck", dict(H_22K_SMALL, upsample_initial_channel=128),
                                                good_state))


def test_extra_parameters_mean_another_model(good_state):
    good_state["discriminator.conv.weight"] = torch.zeros(3)
    with pytest.raises(WeightsError, match="discriminator.conv.weight"):
        BigVGAN.from_state_dict(BigVGANConfig.from_dict(H_22K_SMALL), good_state)


def test_truncated_checkpoint(tmp_path, good_state):
    folder = save_checkpoint(tmp_path / "ck", H_22K_SMALL, good_state)
    data = (folder / "bigvgan_generator.pt").read_bytes()
    (folder / "bigvgan_generator.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="truncated or corrupt"):
        BigVGAN.from_checkpoint(folder)


class Payload:
    """Unpickling this would run code: safe loading must refuse it."""

    def __reduce__(self):
        return (print, ("arbitrary code ran",))


def test_pickle_with_arbitrary_objects_is_refused(tmp_path, good_state, capsys):
    folder = save_checkpoint(tmp_path / "ck", H_22K_SMALL, good_state)
    torch.save({"generator": good_state, "extra": Payload()}, folder / "bigvgan_generator.pt")
    with pytest.raises(WeightsError, match="only safe weights-only loading"):
        BigVGAN.from_checkpoint(folder)
    assert "arbitrary code ran" not in capsys.readouterr().out
    with open(folder / "bigvgan_generator.pt", "wb") as f:
        pickle.dump(Payload(), f)
    with pytest.raises(WeightsError):
        BigVGAN.from_checkpoint(folder)
    assert "arbitrary code ran" not in capsys.readouterr().out


def test_checkpoint_without_generator(tmp_path, good_state):
    folder = save_checkpoint(tmp_path / "ck", H_22K_SMALL, good_state)
    torch.save({"mpd": good_state}, folder / "bigvgan_generator.pt")
    with pytest.raises(WeightsError, match="no 'generator'"):
        BigVGAN.from_checkpoint(folder)


def test_bad_configs(tmp_path, good_state):
    folder = save_checkpoint(tmp_path / "ck", H_22K_SMALL, good_state)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(WeightsError, match="not valid JSON"):
        BigVGAN.from_checkpoint(folder)
    with pytest.raises(WeightsError, match="'upsample_rates'"):
        BigVGANConfig.from_dict({k: v for k, v in H_22K_SMALL.items() if k != "upsample_rates"})
    with pytest.raises(WeightsError, match="activation is 'relu'"):
        BigVGANConfig.from_dict(dict(H_22K_SMALL, activation="relu"))
    with pytest.raises(WeightsError, match="differs from hop_size 300"):
        BigVGANConfig.from_dict(dict(H_22K_SMALL, hop_size=300))
    with pytest.raises(WeightsError, match="does not exist"):
        load_config(tmp_path / "nowhere.json")
    with pytest.raises(WeightsError, match="does not exist"):
        BigVGAN.from_checkpoint(tmp_path / "no_folder")


def test_wrong_number_of_mel_bands():
    with pytest.raises(InputError, match="100 bands.*takes 80"):
        BigVGAN.random(BigVGANConfig.from_dict(H_22K_SMALL))(torch.randn(1, 100, 3))


def test_hop_is_product_of_rates():
    assert BigVGANConfig.from_dict(H_24K).hop == math.prod(H_24K["upsample_rates"]) == 256
