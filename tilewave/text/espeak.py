"""Text -> Kokoro phonemes through espeak-ng: English, and Spanish, French, Hindi, Italian, Brazilian Portuguese.

espeak-ng comes from the `espeakng-loader` wheel (the library and its data, no system install) and is
driven by `phonemizer-fork`. Its IPA is rewritten into Kokoro's symbols with the table of misaki's
`EspeakFallback` (the official kokoro pipeline's espeak path): diphthongs become one capital letter
(aɪ -> I, aʊ -> W, eɪ -> A, ɔɪ -> Y, US oʊ -> O, GB əʊ -> Q), affricates one ligature (ʤ, ʧ),
ɚ -> əɹ, r -> ɹ, syllabic consonants get a ᵊ before them, and American English drops length marks.
Where this differs from misaki, and why:
- British `e^ə` -> `ɛː` is applied before the generic `e` -> `A`; in misaki the generic rule runs first,
  so the British rule never matches and "there" comes out with the diphthong A.
- Language-switch flags ("(fr)") are removed instead of kept: misaki hands espeak single words, we hand
  it whole sentences, where a kept flag would be read as the phonemes f and r.
- Before espeak: «» become “”, brackets become parentheses, ¡ and ¿ are dropped (all outside the
  vocabulary), and a decimal point between digits is spelt out ("3.50" -> "3 point 5 0"), because
  phonemizer would otherwise cut the number at the full stop.
The other languages follow the official pipeline's espeak path for them (misaki's `EspeakG2P`, which
`KPipeline` uses for lang_code e, f, h, i, p): espeak voices es, fr-fr, hi, it, pt-br; the tied diphthongs
and affricates become Kokoro's one-letter symbols (aɪ -> I, aʊ -> W, eɪ -> A, oʊ -> O, əʊ -> Q, ɔɪ -> Y,
dz -> ʣ, dʒ -> ʤ, ts -> ʦ, tʃ -> ʧ, ss -> S); every other symbol is kept as espeak writes it (nasal
vowels keep their combining tilde, long vowels their ː), and hyphens are deleted. The English-only
rewrite of decimals is not applied to them.
Symbols espeak still produces outside the vocabulary are dropped with a warning naming them (the text
was fine; the user cannot fix espeak), whereas raw phoneme input with such symbols is an InputError.
"""
from __future__ import annotations

import logging
import re

from tilewave.errors import InputError, TilewaveError
from tilewave.text.languages import LANGUAGES, check_language  # LANGUAGES: for importers older than languages.py
from tilewave.text.vocab import describe_symbols, unknown_symbols

ESPEAK_VOICES = {"en-us": "en-us", "en-gb": "en-gb", "es": "es", "fr": "fr-fr", "hi": "hi", "it": "it",
                 "pt-br": "pt-br"}
log = logging.getLogger("tilewave.text")

# misaki EspeakFallback.E2M: longest first so that a digraph wins over its first letter.
_ESPEAK_TO_KOKORO = sorted({
    "ʔˌn\u0329": "tn", "ʔn\u0329": "tn", "ʔn": "tn", "ʔ": "t",
    "a^ɪ": "I", "a^ʊ": "W",
    "d^ʒ": "ʤ",
    "e^ɪ": "A", "e": "A",
    "t^ʃ": "ʧ",
    "ɔ^ɪ": "Y",
    "ə^l": "ᵊl",
    "ʲo": "jo", "ʲə": "jə", "ʲ": "",
    "ɚ": "əɹ",
    "r": "ɹ",
    "x": "k", "ç": "k",
    "ɐ": "ə",
    "ɬ": "l",
    "\u0303": "",
}.items(), key=lambda kv: -len(kv[0]))
# misaki EspeakG2P.e2m (its version-1.0 table: Kokoro v1.0's training phonemes)
_ESPEAK_TO_KOKORO_OTHER = sorted({
    "a^ɪ": "I", "a^ʊ": "W", "d^z": "ʣ", "d^ʒ": "ʤ", "e^ɪ": "A", "o^ʊ": "O", "ə^ʊ": "Q", "s^s": "S",
    "t^s": "ʦ", "t^ʃ": "ʧ", "ɔ^ɪ": "Y",
}.items())
_SYLLABIC = re.compile("(\\S)\u0329")
_BEFORE_ESPEAK = str.maketrans({"«": "“", "»": "”", "[": "(", "]": ")", "{": "(", "}": ")", "¡": None, "¿": None})
_DECIMAL = re.compile(r"(\d)\.(\d+)")


def _configure_espeak() -> None:
    try:
        import espeakng_loader
        from phonemizer.backend.espeak.wrapper import EspeakWrapper
    except ImportError as exc:
        raise TilewaveError(f"phonemization needs espeak-ng ({exc}); "
                            "install it with `pip install espeakng-loader phonemizer-fork`") from exc
    EspeakWrapper.set_library(espeakng_loader.get_library_path())
    EspeakWrapper.set_data_path(espeakng_loader.get_data_path())


def prepare_text(text: str, english: bool = True) -> str:
    """What espeak is given: one line, symbols it would mangle rewritten (see the module doc)."""
    text = text.translate(_BEFORE_ESPEAK)
    if english:
        text = _DECIMAL.sub(lambda m: f"{m[1]} point {' '.join(m[2])}", text)
    return " ".join(text.split())


def espeak_to_kokoro(ps: str, british: bool) -> str:
    """Rewrite espeak's IPA (stress marks on, '^' ties) into Kokoro's symbols."""
    ps = ps.strip()
    if british:
        ps = ps.replace("e^ə", "ɛː")
    for old, new in _ESPEAK_TO_KOKORO:
        ps = ps.replace(old, new)
    ps = _SYLLABIC.sub("ᵊ\\1", ps).replace("\u0329", "")
    if british:
        ps = ps.replace("iə", "ɪə").replace("ə^ʊ", "Q")
    else:
        ps = ps.replace("o^ʊ", "O").replace("ɜːɹ", "ɜɹ").replace("ɜː", "ɜɹ").replace("ɪə", "iə").replace("ː", "")
    return ps.replace("o", "ɔ").replace("^", "")


def espeak_to_kokoro_other(ps: str) -> str:
    """The same for the non-English espeak languages (misaki's EspeakG2P rewrite)."""
    ps = ps.strip()
    for old, new in _ESPEAK_TO_KOKORO_OTHER:
        ps = ps.replace(old, new)
    return ps.replace("^", "").replace("-", "")


class EspeakPhonemizer:
    """Phonemize sentences for Kokoro: `EspeakPhonemizer("en-us")(["Hello there."])`; any language of ESPEAK_VOICES."""

    def __init__(self, lang: str = "en-us") -> None:
        lang = check_language(lang)
        if lang not in ESPEAK_VOICES:
            raise InputError(f"espeak-ng does not phonemize {lang!r} for Kokoro here; it does "
                             f"{', '.join(ESPEAK_VOICES)} (use tilewave.text.phonemizer_for for every language)")
        self.lang = lang
        self.british = lang == "en-gb"
        self.english = lang.startswith("en-")
        _configure_espeak()
        from phonemizer.backend import EspeakBackend
        from phonemizer.logger import get_logger

        self._backend = EspeakBackend(language=ESPEAK_VOICES[lang], preserve_punctuation=True, with_stress=True,
                                      tie="^", language_switch="remove-flags", logger=get_logger("quiet"))

    def to_kokoro(self, ps: str) -> str:
        return espeak_to_kokoro(ps, self.british) if self.english else espeak_to_kokoro_other(ps)

    def __call__(self, texts: list[str]) -> list[str]:
        """Kokoro phonemes of each text (one espeak call for the batch); out-of-vocabulary symbols dropped."""
        prepared = [prepare_text(t, self.english) for t in texts]
        # phonemizer drops empty lines from its output and merges neighbouring lines made only of
        # punctuation, which would shift every later text: send no empty line, and when the count
        # still does not match, phonemize the texts one by one.
        sent = [i for i, t in enumerate(prepared) if t]
        raw = self._backend.phonemize([prepared[i] for i in sent], strip=True) if sent else []
        if len(raw) != len(sent):
            raw = ["".join(self._backend.phonemize([prepared[i]], strip=True)) for i in sent]
        out = [""] * len(texts)
        for i, ps in zip(sent, raw):
            ps = self.to_kokoro(ps)
            unknown = unknown_symbols(ps)
            if unknown:
                log.warning("espeak gave symbols outside Kokoro's vocabulary for %r; dropped: %s",
                            texts[i], describe_symbols(unknown))
                ps = "".join(c for c in ps if c not in unknown)
            out[i] = " ".join(ps.split())
        return out
