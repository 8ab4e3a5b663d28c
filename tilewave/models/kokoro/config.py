"""Kokoro-82M hyper-parameters (the official config.json of hexgrad/Kokoro-82M, v1.0)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KokoroConfig:
    n_token: int = 178
    hidden_dim: int = 512
    style_dim: int = 128
    n_layer: int = 3
    max_dur: int = 50
    text_encoder_kernel_size: int = 5
    # ALBERT ("PLBERT"): 12 layers sharing one set of weights. Its activation is transformers' default
    # for AlbertConfig, "gelu_new" (the tanh approximation), which the ONNX export also runs (FastGelu).
    albert_embedding: int = 128
    albert_hidden: int = 768
    albert_heads: int = 12
    albert_ffn: int = 2048
    albert_layers: int = 12
    albert_positions: int = 512
    albert_ln_eps: float = 1e-12
    # iSTFTNet generator
    upsample_rates: tuple[int, ...] = (10, 6)
    upsample_kernel_sizes: tuple[int, ...] = (20, 12)
    upsample_initial_channel: int = 512
    resblock_kernel_sizes: tuple[int, ...] = (3, 7, 11)
    resblock_dilation_sizes: tuple[tuple[int, ...], ...] = ((1, 3, 5), (1, 3, 5), (1, 3, 5))
    gen_istft_n_fft: int = 20
    gen_istft_hop_size: int = 5
    harmonics: int = 8
    sample_rate: int = 24000
    voiced_threshold: float = 10.0

    @property
    def max_tokens(self) -> int:
        """Longest input_ids the model takes, the two 0 pads included."""
        return self.albert_positions

    @property
    def samples_per_frame(self) -> int:
        """Audio samples per duration frame (one predicted duration unit): 2 x 10 x 6 x 5 = 600."""
        prod = 1
        for r in self.upsample_rates:
            prod *= r
        return 2 * prod * self.gen_istft_hop_size


CONFIG = KokoroConfig()
