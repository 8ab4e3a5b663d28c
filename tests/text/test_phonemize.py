"""English -> Kokoro phonemes through espeak-ng: vocabulary-only output, known words, the rewrite rules."""
import logging

import pytest

from tilewave.errors import InputError
from tilewave.text import EspeakPhonemizer, encode, has_phones, vocab
from tilewave.text.espeak import espeak_to_kokoro, prepare_text

SENTENCES = [
    "Hello there. This is tilewave, speaking from a Triton engine!",
    "The quick brown fox jumps over the lazy dog; it was 42 degrees (warm) - isn't it?",
    "I paid 3.50 for two bottles... «Really?» he said — yes.",
    "She thought the church's bird would judge the button, but the hour was near.",
]


@pytest.fixture(scope="module")
def us():
    return EspeakPhonemizer("en-us")


@pytest.fixture(scope="module")
def gb():
    return EspeakPhonemizer("en-gb")


def test_vocabulary_is_kokoros():
    table = vocab()
    assert len(table) == 114 and min(table.values()) == 1 and max(table.values()) == 177
    assert all(len(s) == 1 for s in table)


@pytest.mark.parametrize("lang", ["en-us", "en-gb"])
def test_sentences_give_only_vocabulary_symbols(lang, us, gb):
    table = vocab()
    for ps in (us if lang == "en-us" else gb)(SENTENCES):
        assert ps and has_phones(ps)
        assert set(ps) <= set(table), sorted(set(ps) - set(table))
        assert "^" not in ps and "  " not in ps


@pytest.mark.parametrize("word, expected", [
    ("cat", "kˈæt"), ("go", "ɡˈO"), ("church", "ʧˈɜɹʧ"), ("judge", "ʤˈʌʤ"), ("my", "mˈI"),
    ("now", "nˈW"), ("boy", "bˈY"), ("day", "dˈA"), ("bird", "bˈɜɹd"), ("button", "bˈʌtn"), ("little", "lˈɪɾᵊl"),
])
def test_american_words(us, word, expected):
    assert us([word]) == [expected]


@pytest.mark.parametrize("word, expected", [
    ("cat", "kˈat"), ("go", "ɡˈQ"), ("there", "ðˈɛː"), ("bird", "bˈɜːd"), ("little", "lˈɪtᵊl"),
])
def test_british_words(gb, word, expected):
    assert gb([word]) == [expected]


def test_punctuation_is_kept_where_the_text_has_it(us):
    (ps,) = us(["Yes, no; maybe: really? Sure!"])
    assert [c for c in ps if c in ",;:?!"] == [",", ";", ":", "?", "!"]


def test_text_is_prepared_for_espeak():
    assert prepare_text("It costs 3.50 «now»\n  [ok]¿") == "It costs 3 point 5 0 “now” (ok)"


def test_espeak_ipa_is_rewritten_like_misaki():
    assert espeak_to_kokoro("ˈa^ɪ ˈa^ʊ ˈe^ɪ ˈɔ^ɪ t^ʃ d^ʒ", british=False) == "ˈI ˈW ˈA ˈY ʧ ʤ"
    assert espeak_to_kokoro("ɡˈo^ʊ fˈɜːst ɐbˈaʊt ɚ", british=False) == "ɡˈO fˈɜɹst əbˈaʊt əɹ"
    assert espeak_to_kokoro("ɡˈə^ʊ ðˈe^ə fˈɜːst", british=True) == "ɡˈQ ðˈɛː fˈɜːst"
    assert espeak_to_kokoro("bˈʌʔn̩ lˈɪɾə^l", british=False) == "bˈʌtn lˈɪɾᵊl"


def test_symbols_espeak_invents_are_dropped_with_a_warning(caplog):
    p = EspeakPhonemizer("en-us")

    class Backend:
        def phonemize(self, texts, strip):
            return ["həlˈo^ʊ ʘ wˈɜːld ǁ" for _ in texts]

    p._backend = Backend()
    with caplog.at_level(logging.WARNING, logger="tilewave.text"):
        assert p(["hello world"]) == ["həlˈO wˈɜɹld"]
    assert "'ʘ'" in caplog.text and "'ǁ'" in caplog.text


def test_unknown_language_lists_the_choices():
    with pytest.raises(InputError, match=r"en-us \(a\), en-gb \(b\)"):
        EspeakPhonemizer("de")


def test_encode_wraps_ids_and_rejects_unknown_symbols():
    ids = encode("hˈɛlO")
    table = vocab()
    assert ids.tolist() == [[0, table["h"], table["ˈ"], table["ɛ"], table["l"], table["O"], 0]]
    with pytest.raises(InputError, match="'ʘ'"):
        encode("hʘ")
    with pytest.raises(InputError, match="511"):
        encode("a" * 511)


def test_texts_that_prepare_to_nothing_keep_the_batch_aligned(us):
    assert us(["¿", "cat", "", " \n ", "...", "go", "¡!"]) == ["", "kˈæt", "", "", "...", "ɡˈO", "!"]
    assert us([]) == []
    assert us(["...", "!!!", "?", "cat", "-", "—"]) == ["...", "!!!", "?", "kˈæt", "", "—"]
