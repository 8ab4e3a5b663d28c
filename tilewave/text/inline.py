"""Inline control in the text: `[word](/phonemes/)`, `[pause:0.5s]`, `[voice:bf_emma]` and `[speed:1.2]`.

- `[Kokoro](/kˈOkəɹO/)` says the word with the phonemes between the slashes, in Kokoro's symbols, instead of
  its G2P (the convention of the official kokoro pipeline and misaki). The word itself is what timestamps and
  chunk texts show.
- `[pause:0.5s]` or `[pause:500ms]` is that much silence (0 to 10 s); a pause always ends a chunk.
- `[voice:NAME]` says what follows in that voice (a stock voice, an OpenAI name or a blend, never a file; the
  engine checks each before the text's first chunk), `[voice:default]` in the request's again: a dialogue in one
  request.
- `[speed:X]` says what follows X times as fast as the request (0.25 to 4; the product is kept within Kokoro's
  0.5 to 2).
- `[lang:es]` reads what follows in that language (its own phonemizer; the voice stays the request's unless a
  `[voice:...]` names another), `[lang:default]` in the request's again. Each control ends a chunk.

Before the text is cut into chunks each pronunciation becomes one private-use character (`protect`), so that
no cut falls inside the markup and no normalization rule reads its phonemes; `restore` puts the words back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tilewave.errors import InputError
from tilewave.text.languages import check_language
from tilewave.text.vocab import describe_symbols, has_phones, unknown_symbols

MAX_PAUSE_S = 10.0
PRONUNCIATION = re.compile(r"\[(?P<word>[^\[\]]+)\]\(/(?P<phonemes>[^/)]*)/\)")
CONTROL = re.compile(r"\[\s*(?P<kind>pause|voice|speed|lang)\s*:(?P<value>[^\]]*)\]", re.I)
SPEED_FACTORS = (0.25, 4.0)
_PAUSE_VALUE = re.compile(r"\s*(?P<n>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>s|ms|sec|seconds?)?\s*", re.I)
_FIRST = 0xE000  # the private-use area: characters no text or phonemizer uses
_LAST = 0xF8FF


@dataclass(frozen=True)
class Pronunciation:
    word: str      # as written between the brackets
    phonemes: str  # Kokoro symbols, checked against the vocabulary


def check_pronunciation(word: str, phonemes: str) -> str:
    phonemes = " ".join(phonemes.split())
    unknown = unknown_symbols(phonemes)
    if unknown:
        raise InputError(f"the pronunciation of {word!r}, /{phonemes}/, has symbols outside Kokoro's vocabulary: "
                         f"{describe_symbols(unknown)}; write it with the vocabulary's symbols (tilewave.text.vocab(), "
                         "or see what `tilewave phonemize` gives for a similar word)")
    if not has_phones(phonemes):
        raise InputError(f"the pronunciation of {word!r}, /{phonemes}/, has no phonemes to say; write them "
                         "between the slashes, e.g. [tomato](/təmˈɑtO/)")
    return phonemes


def protect(text: str) -> tuple[str, list[Pronunciation]]:
    """`text` with each `[word](/phonemes/)` replaced by one placeholder character, and the pronunciations."""
    found: list[Pronunciation] = []

    def keep(m: re.Match) -> str:
        if _FIRST + len(found) > _LAST:
            raise InputError(f"a text may hold at most {_LAST - _FIRST + 1} [word](/phonemes/) pronunciations; "
                             "split it into several calls")
        found.append(Pronunciation(m["word"], check_pronunciation(m["word"], m["phonemes"])))
        return chr(_FIRST + len(found) - 1)

    return PRONUNCIATION.sub(keep, text), found


def placeholder_index(char: str) -> int | None:
    """Which pronunciation a character stands for, or None for an ordinary character."""
    return ord(char) - _FIRST if _FIRST <= ord(char) <= _LAST else None


def restore(text: str, pronunciations: list[Pronunciation]) -> str:
    return re.sub("[\ue000-\uf8ff]", lambda m: pronunciations[placeholder_index(m.group(0))].word, text)


def pause_seconds(value: str) -> float:
    m = _PAUSE_VALUE.fullmatch(value)
    if m is None:
        raise InputError(f"cannot read the pause [pause:{value}]; write 0 to {MAX_PAUSE_S:g} seconds or "
                         "milliseconds, e.g. [pause:0.5s] or [pause:500ms]")
    seconds = float(m["n"]) / (1000 if (m["unit"] or "s").lower() == "ms" else 1)
    if seconds > MAX_PAUSE_S:
        raise InputError(f"the pause [pause:{value.strip()}] is {seconds:g} s; a pause may be 0 to {MAX_PAUSE_S:g} s "
                         "(write several for a longer silence)")
    return seconds


@dataclass(frozen=True)
class Section:
    """A stretch of text between controls."""
    text: str
    pause: float = 0.0        # seconds of silence after it
    voice: str | None = None  # the voice it is said in (None: the request's)
    speed: float = 1.0        # times the request's speed
    lang: str | None = None   # the language it is read in (None: the request's)


def speed_factor(value: str) -> float:
    try:
        factor = float(value)
    except ValueError:
        factor = float("nan")
    if not SPEED_FACTORS[0] <= factor <= SPEED_FACTORS[1]:
        raise InputError(f"cannot read [speed:{value}]; write a factor from {SPEED_FACTORS[0]:g} to "
                         f"{SPEED_FACTORS[1]:g} of the request's speed, e.g. [speed:1.2] or [speed:0.8]")
    return factor


def split_controls(text: str) -> list[Section]:
    """The stretches of text between the controls, each with the pause after it and the voice and speed it is said
    in (see the module's doc); the last one has no pause."""
    sections, start, voice, speed, lang = [], 0, None, 1.0, None
    for m in CONTROL.finditer(text):
        kind, value = m["kind"].lower(), m["value"].strip()
        pause = pause_seconds(m["value"]) if kind == "pause" else 0.0
        sections.append(Section(text[start:m.start()], pause, voice, speed, lang))
        if kind == "voice":
            if not value:
                raise InputError("[voice:] names no voice; write a stock voice, e.g. [voice:bf_emma], or "
                                 "[voice:default] for the request's")
            voice = None if value.lower() == "default" else value
        elif kind == "speed":
            speed = speed_factor(value)
        elif kind == "lang":
            lang = None if value.lower() == "default" else check_language(value)
        start = m.end()
    sections.append(Section(text[start:], 0.0, voice, speed, lang))
    return sections
