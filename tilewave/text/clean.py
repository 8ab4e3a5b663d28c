"""What no one reads aloud, taken out before the phonemizer: emoji, and fullwidth forms turned into plain ones.

espeak names each emoji ("Great job! 🎉" said "great job party popper"), and spells fullwidth Latin letters and
digits ("ｗｉｄｔｈ", which East Asian input methods produce) letter by letter as "letter F ...". Pictographs (the
Unicode property Extended_Pictographic, with their modifiers, joiners and variation selectors; from the `regex`
package) are dropped, except the Latin-1 signs © and ®; for the languages espeak reads, fullwidth ASCII forms and
the ideographic space become ASCII (Japanese and Mandarin text keeps them: their G2Ps read them).
"""
from __future__ import annotations

import unicodedata

import regex

_PICTOGRAPHS = regex.compile(r"(?![\x00-\xff])[\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Regional_Indicator}"
                             r"\u200d\ufe0e\ufe0f\u20e3\U000E0020-\U000E007F]+")
# with the spaces before it where no word follows ("Done 🎉." -> "Done."); else a space for it ("a🎉b" -> "a b")
_PICTOGRAPHS_ENDING = regex.compile(rf"\s*(?:{_PICTOGRAPHS.pattern})(?!\w)")
_FULLWIDTH = regex.compile(r"[\uff01-\uff5e\u3000]+")
_KEEPS_FULLWIDTH = ("ja", "zh")


def readable(text: str, lang: str) -> str:
    """`text` without pictographs, its fullwidth ASCII forms made ASCII where `lang` is read by espeak."""
    text = _PICTOGRAPHS.sub(" ", _PICTOGRAPHS_ENDING.sub("", text))
    if lang not in _KEEPS_FULLWIDTH:
        text = _FULLWIDTH.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)
    return text
