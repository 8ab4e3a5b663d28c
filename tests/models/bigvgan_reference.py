"""The official `bigvgan` package (2.4.1) for parity tests.

Its package __init__ imports matplotlib (plots) and librosa (training mel) which the model classes don't
need and which are not installed here, so those two are stubbed in sys.modules for the duration of the
import only; its mel function gets a librosa-compatible slaney filterbank from transformers.
"""
from __future__ import annotations

import importlib
import sys
import types

import numpy as np


def _librosa_mel(*, sr, n_fft, n_mels, fmin, fmax=None, **_):
    from transformers.audio_utils import mel_filter_bank

    return mel_filter_bank(num_frequency_bins=1 + n_fft // 2, num_mel_filters=n_mels, min_frequency=fmin,
                           max_frequency=sr / 2 if fmax is None else fmax, sampling_rate=sr, norm="slaney",
                           mel_scale="slaney").T.astype(np.float32)


def _stubs() -> dict[str, types.ModuleType]:
    mpl = types.ModuleType("matplotlib")
    mpl.use = lambda *a, **k: None
    pylab = types.ModuleType("matplotlib.pylab")
    mpl.pylab = pylab
    librosa = types.ModuleType("librosa")
    filters = types.ModuleType("librosa.filters")
    filters.mel = _librosa_mel
    librosa.filters = filters
    return {"matplotlib": mpl, "matplotlib.pylab": pylab, "librosa": librosa, "librosa.filters": filters}


def load():
    """(bigvgan.bigvgan module, bigvgan.meldataset module, bigvgan.env.AttrDict)."""
    stubs = {k: v for k, v in _stubs().items() if k not in sys.modules}
    sys.modules.update(stubs)
    try:
        bigvgan = importlib.import_module("bigvgan.bigvgan")
        meldataset = importlib.import_module("bigvgan.meldataset")
        env = importlib.import_module("bigvgan.env")
    finally:
        for k in stubs:
            sys.modules.pop(k, None)
    return bigvgan, meldataset, env.AttrDict
