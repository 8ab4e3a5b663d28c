"""KokoroModel's forward contract: profile stages, seeded draws, duration override, speed."""
import contextlib

import torch

from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave.models.kokoro import STAGES


class _Recorder:
    def __init__(self):
        self.names = []

    def stage(self, name):
        self.names.append(name)
        return contextlib.nullcontext()


def test_forward_contract(kokoro_cpu):
    ids, ref_s = random_token_ids(8, 3), voice_style(8)
    rec = _Recorder()
    a = kokoro_cpu(ids, ref_s, generator=torch.Generator().manual_seed(1), profile=rec)
    assert rec.names == list(STAGES)
    assert a.durations.shape == (10,) and a.durations.dtype == torch.long and (a.durations >= 1).all()
    assert a.audio.shape == (int(a.durations.sum()) * 600,) and torch.isfinite(a.audio).all()

    b = kokoro_cpu(ids, ref_s, generator=torch.Generator().manual_seed(1))
    c = kokoro_cpu(ids, ref_s, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a.audio, b.audio)
    assert not torch.equal(a.audio, c.audio)  # the source's phases and noise come from the generator

    forced = torch.full((10,), 2, dtype=torch.long)
    d = kokoro_cpu(ids, ref_s, durations=forced, generator=torch.Generator().manual_seed(1))
    assert torch.equal(d.durations, forced) and d.audio.shape == (20 * 600,)

    fast = kokoro_cpu.features(ids, ref_s, speed=2.0)["durations"]
    assert fast.sum() < a.durations.sum() and (fast >= 1).all()
