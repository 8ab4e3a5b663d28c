"""A session's voices: a spec (a stock or OpenAI name, a blend, a path where the caller allows one, a tensor) resolved
once to its pack and the language it speaks, named voices cached, each language's default.

The language rule, the same for the CLI, the Python API and the server: a request's language is the one it names,
else the language of the stock voices its voice names (`ef_dora` reads Spanish), else the session's. A voice that
names no single language (an OpenAI name, whose voices speak any; a blend across languages; a file; a tensor)
leaves the session's. Paths are opened only where the caller allows them: a server resolves with
allow_paths=False, so no file is ever read on a client's say-so.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from tilewave.engine.voice_catalog import CATALOG, parse_voice_language
from tilewave.engine.voices import default_voice, load_voice, pack_from_parts

NAMED_CACHE = 64  # named packs kept (0.5 MB each; a blend averaged once): bounded, as the names are the clients'


@dataclass(frozen=True, eq=False)
class Voice:
    """A resolved voice: its pack [510, 1, 256] float32 on the CPU, the language its stock voices speak (None: no
    single one), and the spec it came from."""
    pack: torch.Tensor
    language: str | None
    spec: str


class VoiceBank:
    """Resolves voice specs for one session (`cache`: the voice cache root, as voices.load_voice takes)."""

    def __init__(self, cache: str | os.PathLike | None = None) -> None:
        self.cache = cache
        # named voices by spec, least recently used dropped first; a hit is not parsed again, a miss parsed once
        self._named: OrderedDict[str, Voice] = OrderedDict()
        self._lock = threading.Lock()  # a server's requests resolve from several threads
        # each language's default, found once: finding it scans the voice folder (and warns where it falls back),
        # which every request naming no voice in another language than the session's would otherwise repeat
        self._defaults: dict[str, Voice] = {}

    def resolve(self, voice, allow_paths: bool = True) -> Voice:
        """The Voice of a spec, a tensor or an array (checked: InputError with the value), or `voice` itself where
        it is one. Stock names and blends of them come from the cache; a path is read each time (the file may
        change), and only with allow_paths."""
        if isinstance(voice, Voice):
            return voice
        if isinstance(voice, (torch.Tensor, np.ndarray)):
            return Voice(load_voice(voice), None, "tensor")
        if not isinstance(voice, (str, os.PathLike)):
            return Voice(load_voice(voice), None, repr(voice))  # load_voice's InputError names the type
        spec = os.fspath(voice).strip()
        with self._lock:
            hit = self._named.get(spec)
            if hit is not None:
                self._named.move_to_end(spec)
                return hit
        parts, language = parse_voice_language(spec, allow_paths)
        if not all(name in CATALOG for name, _ in parts):  # a file: read each time, never cached
            return Voice(pack_from_parts(parts, self.cache), None, spec)
        found = Voice(pack_from_parts(parts, self.cache), language, spec)
        with self._lock:
            found = self._named.setdefault(spec, found)
            while len(self._named) > NAMED_CACHE:
                self._named.popitem(last=False)
        return found

    def named(self, spec: str) -> Voice:
        """A name or a blend only (a text's [voice:...], a server's request): never a file."""
        return self.resolve(spec, allow_paths=False)

    def default(self, lang: str) -> Voice:
        """The language's default voice (voices.default_voice: the Japanese fallback where it is not installed),
        found once per language for the bank's life: voices installed later are seen by a new session."""
        if lang not in self._defaults:
            self._defaults[lang] = self.named(default_voice(lang, self.cache))
        return self._defaults[lang]
