"""Mandarin text -> Kokoro phonemes, offline: misaki's ZHG2P, the official pipeline's G2P for lang_code 'z'.

For Kokoro v1.0 (ZHG2P without a version, as KPipeline builds it for that model): Arabic numbers become
Chinese numerals (cn2an), jieba cuts the words, pypinyin reads them in tone-3 pinyin, and misaki maps
each syllable to IPA with the tones as arrows (→ first, ↗ second, ↓ third, ↘ fourth). jieba, pypinyin
and cn2an carry their dictionaries in their wheels: nothing is downloaded. Text that is not Chinese
(Latin letters inside a sentence) is passed through as the Kokoro v1.0 pipeline does, and its letters are
then read as phonemes.
"""
from __future__ import annotations

import logging

from tilewave.errors import TilewaveError
from tilewave.text.vocab import describe_symbols, unknown_symbols

log = logging.getLogger("tilewave.text")


class MandarinPhonemizer:
    """`MandarinPhonemizer()(["你好。"])` -> ["ni↓xau↓."]"""

    lang = "zh"

    def __init__(self) -> None:
        try:
            import jieba
            from misaki.zh import ZHG2P
        except ImportError as exc:
            raise TilewaveError(f"Mandarin needs misaki's Chinese G2P ({exc}); install it with "
                                "`pip install misaki==0.9.4 jieba pypinyin cn2an ordered-set`") from exc
        jieba.setLogLevel(logging.WARNING)  # jieba prints its dictionary loading to stderr otherwise
        self._g2p = ZHG2P()

    def __call__(self, texts: list[str]) -> list[str]:
        out = []
        for text in texts:
            ps = self._g2p(text)[0] if text.strip() else ""
            unknown = unknown_symbols(ps)
            if unknown:
                log.warning("the Mandarin G2P gave symbols outside Kokoro's vocabulary for %r; dropped: %s",
                            text, describe_symbols(unknown))
                ps = "".join(c for c in ps if c not in unknown)
            out.append(" ".join(ps.split()))
        return out
