"""SSML (a text that begins with `<speak`) -> the engine's own inline markup, before anything else reads the text.

    <speak>Hello <break time="500ms"/> <phoneme alphabet="ipa" ph="təˈmɑːtoʊ">tomato</phoneme>,
           <say-as interpret-as="characters">SQL</say-as>, <sub alias="World Wide Web">WWW</sub>.</speak>
    -> "Hello [pause:0.5s] [tomato](/təmˈɑtO/), S Q L, World Wide Web."

The subset other engines' users ask for (Kokoro-FastAPI issue 396, hexgrad/kokoro pull 302) and that maps onto what
the engine does: `break` (time, or strength: none 0, x-weak 0.1, weak 0.2, medium 0.4, strong 0.7, x-strong 1 s),
`phoneme` (alphabet "ipa", rewritten into Kokoro's symbols as espeak's IPA is, or
"kokoro": Kokoro's symbols as they are), `sub` (its alias is said), `say-as` (characters / spell-out, digits,
cardinal / number, ordinal, telephone; others read as written), `voice name=` (a stock voice: a dialogue in one
request), `prosody rate=` (x-slow 0.5, slow 0.75, medium 1, fast 1.25, x-fast 1.5, "80%", or "+10%" of the enclosing
rate; pitch and volume unused), `xml:lang` on any element (`<lang xml:lang="es-ES">`: read in that language), `p` (a
paragraph: its own chunk) and `s`. Every other element (`emphasis`, `audio` ...) is read as its text, its attributes
unused; `mark` says nothing. The document is parsed by the standard library's expat parser, which expands no external
entity; a document type declaration is refused (its entities are the only way in for an expansion bomb).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from tilewave.errors import InputError
from tilewave.text.espeak import espeak_to_kokoro, espeak_to_kokoro_other
from tilewave.text.inline import pause_seconds
from tilewave.text.languages import check_language

_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_STRENGTH_S = {"none": 0.0, "x-weak": 0.1, "weak": 0.2, "medium": 0.4, "strong": 0.7, "x-strong": 1.0}
_RATES = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}
# IPA as dictionaries write it goes through espeak's rewrite into Kokoro's symbols (espeak.py, misaki's tables),
# once its diphthongs and affricates carry espeak's tie ("oʊ" -> "o^ʊ" -> "O"), and what espeak never writes is
# written as espeak would (ASCII g, an apostrophe for stress, r-coloured ɝ)
_TIED = ("aɪ", "aʊ", "eɪ", "ɔɪ", "oʊ", "əʊ", "tʃ", "dʒ", "ts", "dz")
_NOT_ESPEAKS = (("ɝ", "ɜːɹ"), ("g", "ɡ"), ("'", "ˈ"))
# IPA marks stress before the syllable (təˈmɑːtoʊ), Kokoro's phonemes before its vowel (təmˈɑtO)
_STRESS_BEFORE_ONSET = re.compile(r"([ˈˌ])([^aeiouyæɑɒɔəɚɛɜɪʊʌɐɨʉøœɤɯᵻᵊAIOQWYˈˌ\s]+)")


def is_ssml(text: str) -> bool:
    return text.lstrip().startswith("<speak")


def to_inline(text: str, lang: str) -> str:
    """The SSML document `text` as plain text with the engine's inline markup (see the module's doc)."""
    if "<!DOCTYPE" in text.upper() or "<!ENTITY" in text.upper():
        raise InputError("SSML with a document type declaration is refused (entities are not expanded); "
                         "remove the <!DOCTYPE ...> part")
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise InputError(f"the SSML is not well-formed XML: {exc}; fix it, or give plain text") from None
    if _name(root) != "speak":
        raise InputError(f"an SSML document's root element is <speak>, not <{_name(root)}>")
    out = "".join(_said(root, lang, {"voice": "default", "speed": 1.0, "lang": "default"}))
    return "\n".join(" ".join(line.split()) for line in out.split("\n"))


def _name(element) -> str:
    return element.tag.rsplit("}", 1)[-1]  # without its namespace (xmlns="http://www.w3.org/2001/10/synthesis")


def _text(element) -> str:
    return " ".join("".join(element.itertext()).split())


def _said(element, lang: str, now: dict):
    """The pieces of text `element` says, its tail excluded; `now`: the voice and speed in force around it."""
    name = _name(element)
    voice = element.get("name") if name == "voice" else None
    rate = element.get("rate") if name == "prosody" else None
    language = element.get(_XML_LANG)
    if voice or rate or language:  # the inline controls for the element's content, and back to what was in force
        inner = dict(now, voice=voice or now["voice"], speed=_rate(rate, now["speed"]) if rate else now["speed"],
                     lang=_language(language, lang) if language else now["lang"])
        changed = [key for key in ("voice", "speed", "lang") if inner[key] != now[key]]
        yield "".join(f" [{key}:{_control(inner[key])}] " for key in changed)
        yield from _content(element, name, lang, inner)
        yield "".join(f" [{key}:{_control(now[key])}] " for key in changed)
        return
    if name == "break":
        yield f" [pause:{_break_seconds(element):g}s] "
    elif name == "phoneme":
        word = _text(element) or "…"
        yield f"[{word.replace('[', '(').replace(']', ')')}](/{_phonemes(element, lang)}/)"
    elif name == "sub":
        yield element.get("alias", _text(element))
    elif name == "say-as":
        yield _say_as(element.get("interpret-as", ""), _text(element))
    elif name != "mark":
        yield from _content(element, name, lang, now)


def _content(element, name: str, lang: str, now: dict):
    """What an element's text and children say (a document's own line breaks are layout: only <p> ends a
    paragraph)."""
    if element.text:
        yield element.text.replace("\n", " ")
    for child in element:
        yield from _said(child, lang, now)
        if child.tail:
            yield child.tail.replace("\n", " ")
    if name == "p":
        yield "\n"
    elif name == "s":
        yield " "


def _control(value) -> str:
    return f"{value:g}" if isinstance(value, float) else value


def _language(tag: str, request: str) -> str:
    """An xml:lang tag as a control's value: the request's language is "default" (so the request's own pipeline and
    voice go on), another one its code; InputError for a language the engine does not read."""
    code = check_language(tag)
    return "default" if code == request else code


def _rate(rate: str, enclosing: float) -> float:
    """A prosody rate as a factor of the request's speed (SSML: a keyword, "80%", or "+10%" of the enclosing)."""
    rate = rate.strip().lower()
    if rate in _RATES:
        return _RATES[rate]
    m = re.fullmatch(r"(?P<sign>[+-]?)(?P<n>\d+(?:\.\d+)?)%", rate)
    if m is None:
        raise InputError(f"<prosody rate={rate!r}>: use x-slow, slow, medium, fast, x-fast, a percentage such as "
                         "\"80%\", or a change such as \"+10%\"")
    n = float(m["n"]) / 100
    factor = enclosing * (1 + n if m["sign"] == "+" else 1 - n) if m["sign"] else n
    return min(max(factor, 0.25), 4.0)


def _break_seconds(element) -> float:
    time = element.get("time")
    if time is not None:
        return pause_seconds(time)
    strength = element.get("strength", "medium")
    if strength not in _STRENGTH_S:
        raise InputError(f"<break strength={strength!r}>: use one of {', '.join(_STRENGTH_S)}, or time=\"500ms\"")
    return _STRENGTH_S[strength]


def _phonemes(element, lang: str) -> str:
    ph, alphabet = element.get("ph", "").strip().strip("/"), element.get("alphabet", "ipa").lower()
    if not ph:
        raise InputError(f"<phoneme> for {_text(element)!r} has no ph=\"...\" to say")
    if "/" in ph or ")" in ph:
        raise InputError(f"<phoneme ph={ph!r}>: '/' and ')' are not phonemes; write the symbols alone")
    if alphabet in ("kokoro", "x-kokoro"):
        return ph
    if alphabet != "ipa":
        raise InputError(f"<phoneme alphabet={alphabet!r}>: use \"ipa\" or \"kokoro\" (Kokoro's own symbols)")
    ph = ph.replace("ˑ", "").replace("\u0361", "").replace("\u035c", "")  # half-long marks and tie bars
    for pair in _TIED:
        ph = ph.replace(pair, f"{pair[0]}^{pair[1]}")
    for written, espeaks in _NOT_ESPEAKS:
        ph = ph.replace(written, espeaks)
    ph = espeak_to_kokoro(ph, lang == "en-gb") if lang.startswith("en") else espeak_to_kokoro_other(ph)
    return _STRESS_BEFORE_ONSET.sub(r"\2\1", ph)


def _say_as(kind: str, text: str) -> str:
    from tilewave.text.normalize import cardinal, ordinal

    kind = kind.lower()
    if kind in ("characters", "spell-out", "verbatim"):
        return " ".join(c.upper() if c.isalpha() else c for c in text if not c.isspace())
    if kind in ("digits", "telephone"):  # each digit; a telephone number's groups apart
        return ", ".join(" ".join(group) for group in re.findall(r"\d+", text)) or text
    number = text.replace(",", "")
    if kind in ("cardinal", "number") and re.fullmatch(r"-?\d+(?:\.\d+)?", number):
        return ("minus " if number.startswith("-") else "") + cardinal(number.lstrip("-"))
    if kind == "ordinal" and re.fullmatch(r"\d+(?:st|nd|rd|th)?", number):
        return ordinal(re.sub(r"\D", "", number))
    return text
