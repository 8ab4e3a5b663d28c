"""A stand-in with KokoroModel.forward's and forward_batch's signatures, for testing the engine without the
82M-parameter model.

It says each token as a 600-sample-per-frame tone whose length follows the token (3 frames, scaled by
1/speed), adds noise drawn from the generator, and records what it was given. forward_batch runs the items
in index order (each drawing from its own generator, as the real batched pass promises), records each batch,
calls `on_batch(batch_record)` first when set, holds `bytes_per_frame` x the batch's padded frames in memory
while it runs (touched, so it is resident), and raises at an item whose token ids contain `fail_on`.
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
    def __init__(self, nan: bool = False, bytes_per_frame: int = 0, fail_on: int | None = None, on_batch=None) -> None:
        self.nan, self.bytes_per_frame, self.fail_on, self.on_batch = nan, bytes_per_frame, fail_on, on_batch
        self.calls: list[dict] = []
        self.batches: list[list[list[int]]] = []  # token ids of each item, per batch
        self.dtypes: list[torch.dtype] = []  # the storage dtype asked for, per batch

    def forward_batch(self, input_ids, ref_s, speeds, generators, profile=None, dtype=torch.float32):
        assert len(input_ids) == ref_s.shape[0] == len(speeds) == len(generators) >= 1
        record = [ids.tolist() for ids in input_ids]
        self.batches.append(record)
        self.dtypes.append(dtype)
        if self.on_batch is not None:
            self.on_batch(record)
        frames = max(int(ids.numel()) for ids in input_ids) * 3 / min(speeds) * len(input_ids)
        held = torch.ones(int(frames * self.bytes_per_frame) // 4) if self.bytes_per_frame else None
        outs = []
        for i, ids in enumerate(input_ids):  # a failing item raises after the items before it drew their noise
            if self.fail_on in record[i]:
                raise RuntimeError(f"the fake model fails on token {self.fail_on}")
            outs.append(self.forward(ids[None], ref_s[i:i + 1], speeds[i], generators[i], profile))
        del held
        return outs

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
