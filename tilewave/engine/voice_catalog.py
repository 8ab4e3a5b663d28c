"""The stock Kokoro v1.0 voices, each language's default, OpenAI's voice names, and the voice-spec syntax.

A stock voice's name says who it is: first letter the language (the official one-letter code: a American
English, b British English, e Spanish, f French, h Hindi, i Italian, j Japanese, p Brazilian Portuguese,
z Mandarin), second letter the gender (f female, m male). This module is data and parsing only (no
files): the CLI's `tilewave voices` and the HTTP voice list read the same table.

A voice spec is
- a name: a stock voice, or one of OpenAI's voice names, which stand for these Kokoro voices (namesakes
  in Kokoro's own release where one exists):
      alloy -> af_alloy, echo -> am_echo, fable -> bm_fable, onyx -> am_onyx, nova -> af_nova,
      shimmer -> af_sky, ash -> am_adam, coral -> af_aoede, sage -> af_sarah;
- a blend, the weighted mean of several voices: `a:0.7,b:0.3` (weights default to 1, so `a,b` is the
  mean), or in Kokoro-FastAPI's form `a+b` (the mean) and `a(2)+b(1)` (weights in parentheses);
- where the caller allows it (the Python API and the CLI; a server does not), a path to a voice file,
  alone or as a part of a blend.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from tilewave.errors import InputError
from tilewave.text.languages import LANGUAGE_NAMES, ONE_LETTER, check_language

VOICE_NAMES = (
    "af_alloy", "af_aoede", "af_bella", "af_heart", "af_jessica", "af_kore", "af_nicole", "af_nova", "af_river",
    "af_sarah", "af_sky", "am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx",
    "am_puck", "am_santa", "bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel", "bm_fable", "bm_george",
    "bm_lewis", "ef_dora", "em_alex", "em_santa", "ff_siwis", "hf_alpha", "hf_beta", "hm_omega", "hm_psi",
    "if_sara", "im_nicola", "jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo", "pf_dora",
    "pm_alex", "pm_santa", "zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi", "zm_yunjian", "zm_yunxi",
    "zm_yunxia", "zm_yunyang",
)
GENDERS = {"f": "female", "m": "male"}
# af_heart: the default of the official pipeline, Kokoro-FastAPI and mlx-audio; the others are the best-graded
# voice of their language in Kokoro's VOICES.md (the first of equals).
DEFAULT_VOICES = {"en-us": "af_heart", "en-gb": "bf_emma", "es": "ef_dora", "fr": "ff_siwis", "hi": "hf_alpha",
                  "it": "if_sara", "pt-br": "pf_dora", "ja": "jf_alpha", "zh": "zf_xiaobei"}
DEFAULT_LANGUAGE = "en-us"  # of a session given neither a language nor a voice that names one
OPENAI_VOICES = {"alloy": "af_alloy", "echo": "am_echo", "fable": "bm_fable", "onyx": "am_onyx", "nova": "af_nova",
                 "shimmer": "af_sky", "ash": "am_adam", "coral": "af_aoede", "sage": "af_sarah"}


@dataclass(frozen=True)
class VoiceInfo:
    name: str
    language: str  # a code of tilewave.text.LANGUAGES
    gender: str    # 'female' or 'male'

    @property
    def language_name(self) -> str:
        return LANGUAGE_NAMES[self.language]


CATALOG = {n: VoiceInfo(n, ONE_LETTER[n[0]], GENDERS[n[1]]) for n in VOICE_NAMES}
_FASTAPI_PART = re.compile(r"^(?P<name>.+?)(?:\((?P<weight>[^()]*)\))?$")


def resolve_name(name: str) -> str | None:
    """The stock voice a name stands for (itself, or an OpenAI name's voice), else None."""
    key = name.strip()
    if key in CATALOG:
        return key
    return OPENAI_VOICES.get(key.lower())


def looks_like_path(spec: str) -> bool:
    return os.path.exists(spec) or spec.endswith((".pt", ".npz", ".bin")) or os.sep in spec or "#" in spec


def _bad_blend(spec: str, item: str) -> InputError:
    return InputError(f"bad voice blend {spec!r} at {item!r}: write NAME:WEIGHT parts separated by commas "
                      "('af_heart:0.7,bf_emma:0.3') or NAME(WEIGHT) parts joined by '+' ('af_heart(2)+bf_emma(1)', "
                      "'af_heart+bf_emma'), with positive weights")


def _weight(text: str, spec: str, item: str) -> float:
    try:
        w = float(text)
    except ValueError:
        raise _bad_blend(spec, item) from None
    if not math.isfinite(w) or w <= 0:
        raise _bad_blend(spec, item)
    return w


def _split(spec: str) -> list[tuple[str, float]]:
    if "+" in spec and "," not in spec:  # Kokoro-FastAPI: a(2)+b(1)
        parts = []
        for item in spec.split("+"):
            m = _FASTAPI_PART.match(item.strip())
            if not m or not m["name"].strip():
                raise _bad_blend(spec, item)
            parts.append((m["name"].strip(), 1.0 if m["weight"] is None else _weight(m["weight"], spec, item)))
        return parts
    parts = []
    for item in spec.split(","):
        name, sep, weight = item.strip().rpartition(":")
        if not sep:
            name, weight = weight, "1"
        try:
            float(weight)
        except ValueError:  # a ':' inside a path (C:\...), not a weight
            name, weight = item.strip(), "1"
        if not name:
            raise _bad_blend(spec, item)
        parts.append((name, _weight(weight, spec, item)))
    return parts


def _unknown(name: str, allow_paths: bool) -> InputError:
    paths = ", a path to a .npz, .pt or .bin voice pack" if allow_paths else ""
    return InputError(f"unknown voice {name!r}; choose a stock voice (`tilewave voices` lists them, e.g. "
                      f"{', '.join(DEFAULT_VOICES.values())}), an OpenAI name ({', '.join(OPENAI_VOICES)}){paths}, "
                      "or a blend like 'af_heart:0.7,bf_emma:0.3' or 'af_heart+bf_emma'")


def parse_voice(spec: str, allow_paths: bool) -> list[tuple[str, float]]:
    """A voice spec -> [(stock voice name or path, weight > 0)], every name resolved (see the module doc).

    With allow_paths=False (a server) only stock and OpenAI names pass; a path is refused like any unknown
    name, so no file is ever opened on a request's say-so."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"no voice given ({spec!r}); choose one of the stock voices (`tilewave voices`), "
                         f"e.g. {DEFAULT_VOICES['en-us']}")
    spec = spec.strip()
    if allow_paths and os.path.exists(spec):  # a file whose name has ',' '+' or ':' is still one file
        return [(spec, 1.0)]
    parts = []
    for name, weight in _split(spec):
        stock = resolve_name(name)
        if stock is None and not (allow_paths and looks_like_path(name)):
            raise _unknown(name, allow_paths)
        parts.append((stock or name, weight))
    return parts


def voice_language(spec: str, allow_paths: bool) -> str | None:
    """The language of the stock voices `spec` names (a name, or a blend of them); None where it names voices of
    several languages, one of OpenAI's names (whose voices speak any language) or a file. InputError as
    parse_voice's for a bad spec."""
    return parse_voice_language(spec, allow_paths)[1]


def parse_voice_language(spec: str, allow_paths: bool) -> tuple[list[tuple[str, float]], str | None]:
    """parse_voice's parts and voice_language's language, from one parse of the spec."""
    parts = parse_voice(spec, allow_paths)
    names = [name.strip() for name, _ in _split(spec.strip())]
    languages = {CATALOG[name].language if name in CATALOG else None for name in names}
    return parts, languages.pop() if len(languages) == 1 else None


def default_voice_for(lang: str) -> str:
    """The stock voice that speaks `lang` by default (lang: a code of tilewave.text.LANGUAGES)."""
    return DEFAULT_VOICES[lang]


def request_language(lang: str | None, voice, fallback: str | None = DEFAULT_LANGUAGE,
                     allow_paths: bool = True) -> str | None:
    """A request's language: `lang` (checked), else the language of the stock voices `voice` names (a spec, or a
    resolved voice with `.language`: `ef_dora` reads Spanish), else `fallback`. The one rule for the CLI, the
    Python API and the server (engine.voice_bank). InputError for an unknown language or a bad voice spec."""
    if lang is not None:
        return check_language(lang)
    if isinstance(voice, (str, os.PathLike)):
        return voice_language(os.fspath(voice), allow_paths) or fallback
    return getattr(voice, "language", None) or fallback
