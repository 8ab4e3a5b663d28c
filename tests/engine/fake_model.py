"""A stand-in with KokoroModel.forward's signature, for testing the engine without the 82M-parameter model.

It says each token as a 600-sample-per-frame tone whose length follows the token (3 frames, scaled by
1/speed), adds noise drawn from the generator, and records what it was given.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

STAGES = ("albert", "duration", "f0_energy", "text_encoder", "decoder", "generator", "istft")


@dataclass
class FakeOutput:
    audio: torch.Tensor
    durations: torch.Tensor


class FakeKokoro:
    def __init__(self, nan: bool = False) -> None:
        self.nan = nan
        self.calls: list[dict] = []

    def forward(self, input_ids, ref_s, speed=1.0, generator=None, profile=None):
        assert input_ids.dtype == torch.long and input_ids.ndim == 2 and input_ids.shape[0] == 1
        assert input_ids[0, 0] == 0 and input_ids[0, -1] == 0 and tuple(ref_s.shape) == (1, 256)
        self.calls.append({"ids": input_ids.clone(), "ref_s": ref_s.clone(), "speed": speed})
        for name in STAGES:
            if profile is not None:
                with profile.stage(name):
                    pass
        durations = torch.full((input_ids.shape[1],), max(1, round(3 / speed)), dtype=torch.long)
        n = int(durations.sum()) * 600
        t = torch.arange(n, dtype=torch.float32) / 24_000
        audio = 0.3 * torch.sin(2 * torch.pi * 180 * t) * torch.sin(torch.pi * t / t[-1]).abs()
        audio = audio + 0.01 * torch.randn(n, generator=generator)
        if self.nan:
            audio[n // 2] = float("nan")
        return FakeOutput(audio, durations)
