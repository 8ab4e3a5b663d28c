"""What no one reads aloud (tilewave/text/clean.py): emoji dropped, fullwidth forms made plain."""
import pytest

from tilewave.errors import InputError
from tilewave.text.clean import readable


def test_emoji_with_their_modifiers_joiners_and_flags_are_dropped_and_latin_signs_kept():
    text = "Great 🎉! 👍🏽 👨‍👩‍👧 🇺🇸 I ❤️ NY © 2024 ® ok"
    assert readable(text, "en-us") == "Great! I NY © 2024 ® ok" and readable("a🎉b", "en-us") == "a b"


def test_fullwidth_forms_become_ascii_except_where_the_languages_g2p_reads_them():
    assert readable("ＦＵＬＬ　ｗｉｄｔｈ １２３ ＄５", "en-us") == "FULL width 123 $5"
    assert readable("ＦＵＬＬ　ｗｉｄｔｈ", "ja") == "ＦＵＬＬ　ｗｉｄｔｈ"


def test_through_the_front_end_only_emoji_is_nothing_to_say_and_no_normalize_keeps_them():
    from tilewave.text.frontend import iter_speakable, text_chunks

    def phonemize(pieces):
        return [p.lower() for p in pieces]

    with pytest.raises(InputError, match="nothing to say"):
        iter_speakable("😀 😀😀", phonemize)
    assert [c.text for c in text_chunks("Done 🎉.", phonemize)] == ["Done."]
    assert [c.text for c in text_chunks("Done 🎉.", phonemize, normalize=False)] == ["Done 🎉."]
