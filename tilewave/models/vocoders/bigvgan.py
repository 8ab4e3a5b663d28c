"""BigVGAN (v1 and v2) generator: log-mel [B, num_mels, T] -> waveform [B, 1, T * prod(upsample_rates)].

Driven by the official config.json (its `h` dict) and the official `bigvgan_generator.pt` ({'generator':
state_dict}); parameter names are the official ones, so one loader reads both official checkpoints and the
state dict of the `bigvgan` package's model. Layers, as in the paper and the package:
  conv_pre (k 7) -> for each rate u (kernel k): transposed conv (stride u, padding (k - u) / 2) -> mean of
  the AMP blocks (one per resblock kernel) -> anti-aliased activation -> conv_post (k 7, bias optional)
  -> tanh, or clamp to [-1, 1] (use_tanh_at_final false).
AMP block type 1: per dilation d: x += conv_k(act(conv_{k,d}(act(x)))); type 2: x += conv_{k,d}(act(x)).
Every activation is the anti-aliased snake / snakebeta (tilewave.ops.resample.act1d, log-scale parameters
when snake_logscale); every conv goes through tilewave.ops.conv.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterator

import torch

from tilewave.errors import InputError, WeightsError
from tilewave.models.vocoders.layers import read_checkpoint, reject_unused, take, take_weight, timed
from tilewave.ops.activation import clamp_scalar
from tilewave.ops.conv import conv1d, conv1d_transpose, time_major_layout
from tilewave.ops.resample import TAPS, act1d, resample_filter
from tilewave.profiling import Profiler

ACT1D_REACH = 6  # y[p] of act1d depends on x[p - 6 .. p + 6] (12-tap up and down filters)
# BigVGAN.time_major_inputs' default: off, because the activation's time-major store lost to the conv's copy on the
# H100 (the copy saved, the activation 2.5x slower: benchmarks/history/2026-12-08.md)
TIME_MAJOR_INPUTS = False


@dataclass(frozen=True)
class BigVGANConfig:
    num_mels: int
    upsample_rates: tuple[int, ...]
    upsample_kernel_sizes: tuple[int, ...]
    upsample_initial_channel: int
    resblock: str
    resblock_kernel_sizes: tuple[int, ...]
    resblock_dilation_sizes: tuple[tuple[int, ...], ...]
    activation: str
    snake_logscale: bool
    sampling_rate: int
    n_fft: int
    hop_size: int
    win_size: int
    fmin: float
    fmax: float | None
    use_tanh_at_final: bool = True  # the package's defaults when a config omits them (v1 configs)
    use_bias_at_final: bool = True

    @classmethod
    def from_dict(cls, h: dict[str, Any], source: str = "config") -> "BigVGANConfig":
        required = [f.name for f in fields(cls) if f.name not in ("use_tanh_at_final", "use_bias_at_final")]
        missing = [k for k in required if k not in h]
        if missing:
            raise WeightsError(f"{source} lacks {', '.join(map(repr, missing))}: it is not a BigVGAN config.json "
                               f"(take the config.json that came with the checkpoint)")
        kw = {f.name: h[f.name] for f in fields(cls) if f.name in h}
        try:
            kw["upsample_rates"] = tuple(int(v) for v in h["upsample_rates"])
            kw["upsample_kernel_sizes"] = tuple(int(v) for v in h["upsample_kernel_sizes"])
            kw["resblock_kernel_sizes"] = tuple(int(v) for v in h["resblock_kernel_sizes"])
            kw["resblock_dilation_sizes"] = tuple(tuple(int(d) for d in ds) for ds in h["resblock_dilation_sizes"])
            kw["resblock"] = str(h["resblock"])
        except (TypeError, ValueError) as exc:
            raise WeightsError(f"{source}: upsample/resblock sizes must be lists of integers ({exc})") from None
        config = cls(**kw)
        config._validate(source)
        return config

    def _validate(self, source: str) -> None:
        problems = []
        if self.resblock not in ("1", "2"):
            problems.append(f"resblock is {self.resblock!r}, expected '1' or '2'")
        if self.activation not in ("snake", "snakebeta"):
            problems.append(f"activation is {self.activation!r}, expected 'snake' or 'snakebeta'")
        if len(self.upsample_rates) != len(self.upsample_kernel_sizes) or not self.upsample_rates:
            problems.append(f"upsample_rates {list(self.upsample_rates)} and upsample_kernel_sizes "
                            f"{list(self.upsample_kernel_sizes)} must be non-empty lists of one length")
        if len(self.resblock_kernel_sizes) != len(self.resblock_dilation_sizes) or not self.resblock_kernel_sizes:
            problems.append("resblock_kernel_sizes and resblock_dilation_sizes must be non-empty lists of one length")
        if self.upsample_initial_channel % (2 ** len(self.upsample_rates)):
            problems.append(f"upsample_initial_channel {self.upsample_initial_channel} must halve "
                            f"{len(self.upsample_rates)} times")
        if math.prod(self.upsample_rates) != self.hop_size:
            problems.append(f"the upsampling factor {math.prod(self.upsample_rates)} (product of upsample_rates) "
                            f"differs from hop_size {self.hop_size}")
        if problems:
            raise WeightsError(f"{source} is not a usable BigVGAN configuration: " + "; ".join(problems))

    @property
    def hop(self) -> int:
        return math.prod(self.upsample_rates)

    def channels(self, stage: int) -> int:
        """Channels after upsampling stage `stage` (0-based); stage -1 is conv_pre's output."""
        return self.upsample_initial_channel // 2 ** (stage + 1)


def load_config(path: str | Path) -> BigVGANConfig:
    path = Path(path)
    try:
        h = json.loads(path.read_text())
    except FileNotFoundError:
        raise WeightsError(f"config {str(path)!r} does not exist; a BigVGAN checkpoint folder holds config.json "
                           f"beside bigvgan_generator.pt") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WeightsError(f"config {str(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(h, dict):
        raise WeightsError(f"config {str(path)!r} holds a {type(h).__name__}, expected a JSON object")
    return BigVGANConfig.from_dict(h, source=f"config {str(path)!r}")


# ---------------------------------------------------------------------------------------------------
# parameter layout (official names)
# ---------------------------------------------------------------------------------------------------
def _amp_convs(config: BigVGANConfig, n: int) -> list[tuple[str, int]]:
    """(parameter prefix, dilation) of AMP block n's convs, in the order the block applies them."""
    dilations = config.resblock_dilation_sizes[n % len(config.resblock_kernel_sizes)]
    if config.resblock == "1":
        return [c for j, d in enumerate(dilations)
                for c in ((f"resblocks.{n}.convs1.{j}", d), (f"resblocks.{n}.convs2.{j}", 1))]
    return [(f"resblocks.{n}.convs.{j}", d) for j, d in enumerate(dilations)]


def parameter_layout(config: BigVGANConfig) -> Iterator[tuple[str, str, tuple[int, ...]]]:
    """(prefix, kind, shape) of every parameter group: kind 'conv' (weight OIK, or IOK for the upsamplers,
    plus bias) or 'act' (alpha [, beta] and the two resampling filters), in forward order."""
    nk = len(config.resblock_kernel_sizes)
    yield "conv_pre", "conv", (config.upsample_initial_channel, config.num_mels, 7)
    for i, k in enumerate(config.upsample_kernel_sizes):
        yield f"ups.{i}.0", "conv", (config.channels(i - 1), config.channels(i), k)
        ch = config.channels(i)
        for j, k_res in enumerate(config.resblock_kernel_sizes):
            n = i * nk + j
            for m, (prefix, _) in enumerate(_amp_convs(config, n)):
                yield f"resblocks.{n}.activations.{m}", "act", (ch,)
                yield prefix, "conv", (ch, ch, k_res)
    yield "activation_post", "act", (config.channels(len(config.upsample_rates) - 1),)
    yield "conv_post", "conv", (1, config.channels(len(config.upsample_rates) - 1), 7)


def _has_bias(config: BigVGANConfig, prefix: str) -> bool:
    return prefix != "conv_post" or config.use_bias_at_final


def load_state_dict(config: BigVGANConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Check every parameter against the config and fold weight norm; returns flat float32 parameters."""
    used: set[str] = set()
    params: dict[str, torch.Tensor] = {}
    for prefix, kind, shape in parameter_layout(config):
        if kind == "conv":
            params[f"{prefix}.weight"] = take_weight(state, prefix, shape, used)
            if _has_bias(config, prefix):
                params[f"{prefix}.bias"] = take(state, f"{prefix}.bias", (shape[1] if prefix.startswith("ups.")
                                                                         else shape[0],), used)
        else:
            params[f"{prefix}.alpha"] = take(state, f"{prefix}.act.alpha", shape, used)
            if config.activation == "snakebeta":
                params[f"{prefix}.beta"] = take(state, f"{prefix}.act.beta", shape, used)
            params[f"{prefix}.up_filter"] = take(state, f"{prefix}.upsample.filter", (1, 1, TAPS), used).reshape(-1)
            params[f"{prefix}.down_filter"] = take(state, f"{prefix}.downsample.lowpass.filter", (1, 1, TAPS),
                                                   used).reshape(-1)
    reject_unused(state, used, "this BigVGAN configuration")
    return {k: v.float() for k, v in params.items()}


def random_state_dict(config: BigVGANConfig, seed: int = 0) -> dict[str, torch.Tensor]:
    """A weight-normed state dict in the official layout with random values: folded conv weights of variance
    ~1 / fan_in (so that the signal keeps its scale through the stages, unlike the package's N(0, 0.01)
    training init), snake parameters spread around their initial values."""
    gen = torch.Generator().manual_seed(seed)
    randn = lambda *shape, std=1.0: torch.randn(*shape, generator=gen) * std
    state: dict[str, torch.Tensor] = {}
    for prefix, kind, shape in parameter_layout(config):
        if kind == "conv":
            upsampler = prefix.startswith("ups.")
            fan_in = shape[0] * shape[2] / config.upsample_rates[int(prefix.split(".")[1])] if upsampler \
                else shape[1] * shape[2]
            row = math.prod(shape[1:])  # weight norm's g is the norm of one dim-0 slice
            # damped residual branches and output: the audio stays mostly inside the final clamp
            gain = {"resblocks": 0.3, "conv_post": 0.05}.get(prefix.split(".")[0], 1.0)
            state[f"{prefix}.weight_g"] = gain * math.sqrt(row / fan_in) * (1 + 0.1 * randn(shape[0], 1, 1))
            state[f"{prefix}.weight_v"] = randn(*shape)
            if _has_bias(config, prefix):
                state[f"{prefix}.bias"] = randn(shape[1] if prefix.startswith("ups.") else shape[0], std=0.01)
        else:
            for name in ("alpha", "beta") if config.activation == "snakebeta" else ("alpha",):
                state[f"{prefix}.act.{name}"] = (randn(*shape, std=0.3) if config.snake_logscale
                                                 else 1 + 0.3 * torch.rand(*shape, generator=gen))
            state[f"{prefix}.upsample.filter"] = resample_filter().view(1, 1, TAPS).clone()
            state[f"{prefix}.downsample.lowpass.filter"] = resample_filter().view(1, 1, TAPS).clone()
    return state


# ---------------------------------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------------------------------
class BigVGAN:
    """The generator with folded weights. Call it on log-mels [B, num_mels, T] (or [num_mels, T])."""

    def __init__(self, config: BigVGANConfig, params: dict[str, torch.Tensor], device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32):
        self.config = config
        self.dtype = dtype
        self.device = torch.device(device)
        # resampling filters and snake parameters stay float32: act1d computes in float32 whatever x's dtype
        self.params = {k: v.to(self.device, torch.float32 if _is_act_param(k) else dtype) for k, v in params.items()}
        self.time_major_on = TIME_MAJOR_INPUTS

    def time_major_inputs(self, on: bool = True) -> "BigVGAN":
        """The activations before the convs write the conv's time-major input themselves where the conv's tap kernel
        would copy it so: the same values, one pass fewer (default: TIME_MAJOR_INPUTS)."""
        self.time_major_on = on
        return self

    @classmethod
    def from_state_dict(cls, config: BigVGANConfig, state: dict[str, torch.Tensor], **kw) -> "BigVGAN":
        return cls(config, load_state_dict(config, state), **kw)

    @classmethod
    def from_checkpoint(cls, folder: str | Path, **kw) -> "BigVGAN":
        """An official checkpoint folder: config.json + bigvgan_generator.pt ({'generator': state_dict})."""
        folder = Path(folder)
        if not folder.is_dir():
            raise WeightsError(f"checkpoint folder {str(folder)!r} does not exist; it must hold config.json and "
                               f"bigvgan_generator.pt (see `tilewave vocode --help` for where to get them)")
        config = load_config(folder / "config.json")
        ckpt = read_checkpoint(folder / "bigvgan_generator.pt")
        if "generator" not in ckpt or not isinstance(ckpt["generator"], dict):
            raise WeightsError(f"{str(folder / 'bigvgan_generator.pt')!r} has no 'generator' state dict (keys: "
                               f"{sorted(map(str, ckpt))[:8]}); is it a discriminator or optimizer checkpoint?")
        return cls.from_state_dict(config, ckpt["generator"], **kw)

    @classmethod
    def random(cls, config: BigVGANConfig, seed: int = 0, **kw) -> "BigVGAN":
        return cls.from_state_dict(config, random_state_dict(config, seed), **kw)

    def context_frames(self) -> int:
        """An upper bound of the receptive field's half-width in mel frames: audio of frame t depends on mel
        frames t - context .. t + context only (what chunked vocoding must overlap)."""
        h = self.config
        reach, scale = 3.0, 1  # conv_pre k 7; scale = positions per mel frame at the current stage
        for u, k in zip(h.upsample_rates, h.upsample_kernel_sizes):
            reach += math.ceil(k / u) / scale
            scale *= u
            per_kernel = []
            for k_res, ds in zip(h.resblock_kernel_sizes, h.resblock_dilation_sizes):
                half = (k_res - 1) // 2
                if h.resblock == "1":  # act, conv (k, d), act, conv (k, 1) per dilation
                    per_kernel.append(sum(2 * ACT1D_REACH + half * (d + 1) for d in ds))
                else:  # act, conv (k, d) per dilation
                    per_kernel.append(sum(ACT1D_REACH + half * d for d in ds))
            reach += max(per_kernel) / scale
        reach += (ACT1D_REACH + 3) / scale
        return math.ceil(reach)

    def _act(self, prefix: str, x: torch.Tensor, into: str | None = None, dilation: int = 1):
        """The activation `prefix` of x; into: the conv that reads it (with its dilation), whose time-major input
        it then writes where that conv would copy x so (time_major_inputs)."""
        P = self.params
        layout = None
        if into is not None and self.time_major_on:
            w = P[f"{into}.weight"]
            layout = time_major_layout(x, w, P.get(f"{into}.bias"), padding=dilation * (w.shape[-1] - 1) // 2,
                                       dilation=dilation)
        return act1d(x, P[f"{prefix}.alpha"], P.get(f"{prefix}.beta"), self.config.snake_logscale,
                     P[f"{prefix}.up_filter"], P[f"{prefix}.down_filter"], time_major=layout)

    def _conv(self, prefix: str, x, dilation: int = 1) -> torch.Tensor:
        w = self.params[f"{prefix}.weight"]
        return conv1d(x, w, self.params.get(f"{prefix}.bias"), padding=dilation * (w.shape[-1] - 1) // 2,
                      dilation=dilation)

    def _amp_block(self, n: int, x: torch.Tensor, stage: str, profiler: Profiler | None) -> torch.Tensor:
        convs = _amp_convs(self.config, n)
        step = 2 if self.config.resblock == "1" else 1
        for j in range(0, len(convs), step):
            xt = x
            for m in range(j, j + step):
                with timed(profiler, stage, "act"):
                    xt = self._act(f"resblocks.{n}.activations.{m}", xt, *convs[m])
                with timed(profiler, stage, "conv"):
                    xt = self._conv(convs[m][0], xt, convs[m][1])
            x = xt + x
        return x

    @torch.no_grad()
    def __call__(self, mel: torch.Tensor, profiler: Profiler | None = None) -> torch.Tensor:
        h, P = self.config, self.params
        x = mel if mel.dim() == 3 else mel.unsqueeze(0)
        if x.shape[1] != h.num_mels:
            raise InputError(f"mel has {x.shape[1]} bands (shape {list(mel.shape)}), this BigVGAN takes "
                             f"{h.num_mels}: compute the mel with the checkpoint's config (tilewave vocode on a wav does)")
        x = x.to(self.device, self.dtype).contiguous()
        with timed(profiler, "conv_pre", "conv"):
            x = self._conv("conv_pre", x)
        nk = len(h.resblock_kernel_sizes)
        for i, (u, k) in enumerate(zip(h.upsample_rates, h.upsample_kernel_sizes)):
            stage = f"stage{i}"
            with timed(profiler, stage, "conv_transpose"):
                x = conv1d_transpose(x, P[f"ups.{i}.0.weight"], P[f"ups.{i}.0.bias"], stride=u, padding=(k - u) // 2)
            xs = self._amp_block(i * nk, x, stage, profiler)
            for j in range(1, nk):
                xs = xs + self._amp_block(i * nk + j, x, stage, profiler)
            x = xs / nk
        with timed(profiler, "post", "act"):
            x = self._act("activation_post", x, "conv_post")
        with timed(profiler, "post", "conv"):
            x = self._conv("conv_post", x)
        with timed(profiler, "post", "act"):
            x = torch.tanh(x) if h.use_tanh_at_final else clamp_scalar(x, -1.0, 1.0)
        return x


def _is_act_param(key: str) -> bool:
    return key.endswith((".alpha", ".beta", "_filter"))
