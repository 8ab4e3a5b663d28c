"""The official implementations that the model benchmarks (harness/model_bench.py) and the parity tests compare
against: `kokoro` 0.9.4's KModel and `bigvgan` 2.4.1's generator. Both are optional (`pip install --no-deps
kokoro==0.9.4 bigvgan==2.4.1`, as the Makefile does); a missing one raises ImportError naming that command.

Neither package imports cleanly on its own here: kokoro/__init__.py imports its text pipeline (and through it
`misaki`'s English G2P) though KModel needs only torch and transformers, so the package is registered without
running its __init__; bigvgan's __init__ imports matplotlib (plots) and librosa (training mel), which the model
classes don't need, so those two are stubbed in sys.modules for the import only, its mel function getting a
librosa-compatible slaney filterbank from transformers.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import numpy as np

from tilewave.text.vocab import vocab

KOKORO_INSTALL = "pip install --no-deps kokoro==0.9.4"
BIGVGAN_INSTALL = "pip install --no-deps bigvgan==2.4.1"

OFFICIAL_KOKORO_CONFIG = {
    "istftnet": {"upsample_kernel_sizes": [20, 12], "upsample_rates": [10, 6], "gen_istft_hop_size": 5,
                 "gen_istft_n_fft": 20, "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
                 "resblock_kernel_sizes": [3, 7, 11], "upsample_initial_channel": 512},
    "dim_in": 64, "dropout": 0.2, "hidden_dim": 512, "max_conv_dim": 512, "max_dur": 50,
    "multispeaker": True, "n_layer": 3, "n_mels": 80, "n_token": 178, "style_dim": 128,
    "text_encoder_kernel_size": 5,
    "plbert": {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 2048,
               "max_position_embeddings": 512, "num_hidden_layers": 12, "dropout": 0.1},
}


def import_official_kokoro():
    """The official kokoro.model module (KModel), its package __init__ not run."""
    if "kokoro.model" not in sys.modules:
        spec = importlib.util.find_spec("kokoro")
        if spec is None:
            raise ImportError(f"the official kokoro package is missing: {KOKORO_INSTALL}")
        if "kokoro" not in sys.modules:
            pkg = types.ModuleType("kokoro")
            pkg.__path__ = list(spec.submodule_search_locations)
            sys.modules["kokoro"] = pkg
        import kokoro.model  # noqa: F401
    return sys.modules["kokoro.model"]


def official_kmodel(pth_path, device="cpu"):
    """KModel(disable_complex=False) on the weights at pth_path (official layout), in eval mode."""
    KModel = import_official_kokoro().KModel
    cfg = dict(OFFICIAL_KOKORO_CONFIG, vocab=vocab())
    return KModel(repo_id="hexgrad/Kokoro-82M", config=cfg, model=str(pth_path),
                  disable_complex=False).to(device).eval()


def _librosa_mel(*, sr, n_fft, n_mels, fmin, fmax=None, **_):
    from transformers.audio_utils import mel_filter_bank

    return mel_filter_bank(num_frequency_bins=1 + n_fft // 2, num_mel_filters=n_mels, min_frequency=fmin,
                           max_frequency=sr / 2 if fmax is None else fmax, sampling_rate=sr, norm="slaney",
                           mel_scale="slaney").T.astype(np.float32)


def _bigvgan_stubs() -> dict[str, types.ModuleType]:
    mpl = types.ModuleType("matplotlib")
    mpl.use = lambda *a, **k: None
    pylab = types.ModuleType("matplotlib.pylab")
    mpl.pylab = pylab
    librosa = types.ModuleType("librosa")
    filters = types.ModuleType("librosa.filters")
    filters.mel = _librosa_mel
    librosa.filters = filters
    return {"matplotlib": mpl, "matplotlib.pylab": pylab, "librosa": librosa, "librosa.filters": filters}


def import_official_bigvgan():
    """(bigvgan.bigvgan module, bigvgan.meldataset module, bigvgan.env.AttrDict)."""
    if importlib.util.find_spec("bigvgan") is None:
        raise ImportError(f"the official bigvgan package is missing: {BIGVGAN_INSTALL}")
    stubs = {k: v for k, v in _bigvgan_stubs().items() if k not in sys.modules}
    sys.modules.update(stubs)
    try:
        bigvgan = importlib.import_module("bigvgan.bigvgan")
        meldataset = importlib.import_module("bigvgan.meldataset")
        env = importlib.import_module("bigvgan.env")
    finally:
        for k in stubs:
            sys.modules.pop(k, None)
    return bigvgan, meldataset, env.AttrDict


def official_bigvgan(config: dict, state: dict, device="cpu"):
    """NVIDIA's generator for an official config dict on the same state dict, weight norm removed, in eval mode."""
    ref, _, AttrDict = import_official_bigvgan()
    model = ref.BigVGAN(AttrDict(dict(config)))
    model.load_state_dict(state)
    model.remove_weight_norm()
    return model.to(device).eval()
