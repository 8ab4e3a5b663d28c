"""Causal latent decoder (DAC / BigVGAN style): latents [B, latent_dim, T] -> waveform [B, 1, T * prod(rates)].

  conv_in (k 7): latent_dim -> channels
  per block b (rate r, channels C -> C / 2):
      SnakeBeta -> causal transposed conv (kernel 2r, stride r) -> 3 residual units at C / 2
      residual unit (dilation d in 1, 3, 9):  x + conv_k1(SnakeBeta(causal conv_k7,d(SnakeBeta(x))))
  SnakeBeta -> conv_out (k 7): C_last -> 1

"Causal": output sample t depends on inputs at times <= t only, so the decoder can stream.
  - conv (kernel k, dilation d): zero padding of d (k - 1) on the left only, none on the right; output length
    equals input length, out[t] = sum_i w[i] x[t - d (k - 1) + d i].
  - transposed conv (kernel 2r, stride r): no padding; of its (L + 1) r outputs the last r (the right
    overhang, which would need input L) are trimmed, leaving L r samples; out[t] takes x[t // r] and
    x[t // r - 1] (zero before the start).
SnakeBeta here is the plain (not anti-aliased) activation x + sin(a x)^2 / (b + 1e-9), log-scale parameters
by default. Defaults reproduce the seed's decoder: 1024 -> 1536 -> 768 -> 384 -> 192 -> 96 -> 1, x480.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import torch

from tilewave.models.vocoders.layers import reject_unused, take, take_weight, timed
from tilewave.ops.activation import snake
from tilewave.ops.conv import conv1d, conv1d_transpose
from tilewave.profiling import Profiler


@dataclass(frozen=True)
class CausalDecoderConfig:
    latent_dim: int = 1024
    channels: int = 1536
    rates: tuple[int, ...] = (8, 5, 4, 3)
    dilations: tuple[int, ...] = (1, 3, 9)
    kernel_size: int = 7
    snake_logscale: bool = True

    @property
    def hop(self) -> int:
        return math.prod(self.rates)

    def block_channels(self, b: int) -> int:
        """Channels after block b (0-based); b = -1 is conv_in's output."""
        return self.channels // 2 ** (b + 1)


def parameter_layout(config: CausalDecoderConfig) -> Iterator[tuple[str, str, tuple[int, ...]]]:
    """(prefix, kind, shape): kind 'conv' (weight OIK, IOK for the transposed convs, plus bias) or 'snake'."""
    k = config.kernel_size
    yield "conv_in", "conv", (config.channels, config.latent_dim, k)
    for b, _ in enumerate(config.rates):
        c_in, c_out = config.block_channels(b - 1), config.block_channels(b)
        r = config.rates[b]
        yield f"blocks.{b}.snake", "snake", (c_in,)
        yield f"blocks.{b}.up", "conv", (c_in, c_out, 2 * r)
        for u, _ in enumerate(config.dilations):
            yield f"blocks.{b}.res.{u}.snake1", "snake", (c_out,)
            yield f"blocks.{b}.res.{u}.conv1", "conv", (c_out, c_out, k)
            yield f"blocks.{b}.res.{u}.snake2", "snake", (c_out,)
            yield f"blocks.{b}.res.{u}.conv2", "conv", (c_out, c_out, 1)
    c_last = config.block_channels(len(config.rates) - 1)
    yield "snake_out", "snake", (c_last,)
    yield "conv_out", "conv", (1, c_last, k)


def _bias_shape(prefix: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    return (shape[1],) if prefix.endswith(".up") else (shape[0],)


def load_state_dict(config: CausalDecoderConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Parameters named as parameter_layout says ('<prefix>.weight' or weight-normed '.weight_g/_v', '.bias';
    '<prefix>.alpha' and '.beta' for snakes); checked against the config, weight norm folded."""
    used: set[str] = set()
    params: dict[str, torch.Tensor] = {}
    for prefix, kind, shape in parameter_layout(config):
        if kind == "conv":
            params[f"{prefix}.weight"] = take_weight(state, prefix, shape, used)
            params[f"{prefix}.bias"] = take(state, f"{prefix}.bias", _bias_shape(prefix, shape), used)
        else:
            params[f"{prefix}.alpha"] = take(state, f"{prefix}.alpha", shape, used)
            params[f"{prefix}.beta"] = take(state, f"{prefix}.beta", shape, used)
    reject_unused(state, used, "this causal decoder configuration")
    return {k: v.float() for k, v in params.items()}


def random_state_dict(config: CausalDecoderConfig, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random parameters with signal-preserving scales (conv weights ~ N(0, 1 / fan_in))."""
    gen = torch.Generator().manual_seed(seed)
    state: dict[str, torch.Tensor] = {}
    for prefix, kind, shape in parameter_layout(config):
        if kind == "conv":
            # a transposed conv of kernel 2r, stride r sums 2 taps of every input channel per output
            fan_in = shape[0] * 2 if prefix.endswith(".up") else shape[1] * shape[2]
            state[f"{prefix}.weight"] = torch.randn(*shape, generator=gen) / math.sqrt(fan_in)
            state[f"{prefix}.bias"] = torch.randn(*_bias_shape(prefix, shape), generator=gen) * 0.01
        else:
            for name in ("alpha", "beta"):  # log-scale around 0 (a = b = 1), linear-scale in (1, 1.3)
                draw = torch.randn(*shape, generator=gen) * 0.3
                state[f"{prefix}.{name}"] = draw if config.snake_logscale else 1 + draw.abs()
    return state


class CausalDecoder:
    """The decoder with folded weights; call it on latents [B, latent_dim, T] (or [latent_dim, T])."""

    def __init__(self, config: CausalDecoderConfig, params: dict[str, torch.Tensor],
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32):
        self.config = config
        self.device = torch.device(device)
        self.dtype = dtype
        self.params = {k: v.to(self.device, dtype) for k, v in params.items()}

    @classmethod
    def from_state_dict(cls, config: CausalDecoderConfig, state: dict[str, torch.Tensor], **kw) -> "CausalDecoder":
        return cls(config, load_state_dict(config, state), **kw)

    @classmethod
    def random(cls, config: CausalDecoderConfig | None = None, seed: int = 0, **kw) -> "CausalDecoder":
        config = config or CausalDecoderConfig()
        return cls.from_state_dict(config, random_state_dict(config, seed), **kw)

    def _snake(self, prefix: str, x: torch.Tensor) -> torch.Tensor:
        return snake(x, self.params[f"{prefix}.alpha"], self.params[f"{prefix}.beta"], self.config.snake_logscale)

    def _causal_conv(self, prefix: str, x: torch.Tensor, dilation: int = 1) -> torch.Tensor:
        w = self.params[f"{prefix}.weight"]
        left = dilation * (w.shape[-1] - 1)
        # zero left padding through the conv's own (symmetric) padding, then drop the right overhang
        y = conv1d(x, w, self.params[f"{prefix}.bias"], padding=left, dilation=dilation)
        return y[..., : x.shape[-1]].contiguous() if left else y

    def _causal_up(self, prefix: str, x: torch.Tensor, rate: int) -> torch.Tensor:
        y = conv1d_transpose(x, self.params[f"{prefix}.weight"], self.params[f"{prefix}.bias"], stride=rate)
        return y[..., : x.shape[-1] * rate].contiguous()

    @torch.no_grad()
    def __call__(self, latents: torch.Tensor, profiler: Profiler | None = None) -> torch.Tensor:
        h = self.config
        x = (latents if latents.dim() == 3 else latents.unsqueeze(0)).to(self.device, self.dtype).contiguous()
        with timed(profiler, "conv_in", "conv"):
            x = self._causal_conv("conv_in", x)
        for b, r in enumerate(h.rates):
            stage = f"block{b}"
            with timed(profiler, stage, "act"):
                x = self._snake(f"blocks.{b}.snake", x)
            with timed(profiler, stage, "conv_transpose"):
                x = self._causal_up(f"blocks.{b}.up", x, r)
            for u, d in enumerate(h.dilations):
                y = x
                for j, dilation in ((1, d), (2, 1)):  # snake -> conv k7 dilated, snake -> conv k1
                    with timed(profiler, stage, "act"):
                        y = self._snake(f"blocks.{b}.res.{u}.snake{j}", y)
                    with timed(profiler, stage, "conv"):
                        y = self._causal_conv(f"blocks.{b}.res.{u}.conv{j}", y, dilation)
                x = x + y
        with timed(profiler, "out", "act"):
            x = self._snake("snake_out", x)
        with timed(profiler, "out", "conv"):
            x = self._causal_conv("conv_out", x)
        return x
