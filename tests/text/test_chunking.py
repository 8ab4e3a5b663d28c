"""Chunks: never more than 510 phonemes, cut at sentence, then clause, then word boundaries, packed full."""
import logging
import random
import re

import pytest

from tilewave.text import EspeakPhonemizer, chunk_phonemes, chunk_text


def lower(pieces):
    """A phonemizer double: one phoneme per character, so lengths are easy to reason about."""
    return [p.lower() for p in pieces]


def test_long_english_text_with_espeak_packs_whole_sentences():
    sentences = [f"Sentence number {i} talks about the weather and the sea." for i in range(30)]
    text = " ".join(sentences)
    chunks = chunk_text(text, EspeakPhonemizer("en-us"))
    assert len(chunks) > 1
    assert all(1 <= len(c.phonemes) <= 510 for c in chunks)
    assert " ".join(c.text for c in chunks) == text
    assert all(c.text.endswith(".") and c.phonemes.endswith(".") for c in chunks)
    # packed: the next chunk's first sentence would not have fitted
    for a, b in zip(chunks, chunks[1:]):
        first = re.split(r"(?<=\.) ", b.phonemes)[0]
        assert len(a.phonemes) + 1 + len(first) > 510


def test_a_long_sentence_is_cut_at_clauses():
    clause = "and then the wind came over the hills again"
    text = ", ".join([clause] * 30) + "."
    chunks = chunk_text(text, lower)
    assert len(chunks) > 1 and all(len(c.phonemes) <= 510 for c in chunks)
    assert all(c.text.endswith(",") for c in chunks[:-1]) and chunks[-1].text.endswith(".")
    assert " ".join(c.text for c in chunks) == text


def test_semicolons_win_over_commas():
    part = "one, two, three, four, five, six, seven, eight, nine, ten, eleven, twelve"
    text = "; ".join([part] * 12) + "."
    chunks = chunk_text(text, lower)
    assert all(c.text.endswith(";") for c in chunks[:-1])
    assert all(len(c.phonemes) <= 510 for c in chunks)


def test_text_without_punctuation_is_cut_between_words():
    text = " ".join(["word"] * 300)
    chunks = chunk_text(text, lower)
    assert all(len(c.phonemes) <= 510 for c in chunks)
    assert " ".join(c.text for c in chunks) == text


def test_a_giant_word_is_cut_inside_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="tilewave.text"):
        chunks = chunk_text("x" * 1200, lower)
    assert [len(c.phonemes) for c in chunks] == [510, 510, 180]
    assert "1200 phonemes" in caplog.text


def test_paragraphs_always_end_a_chunk():
    chunks = chunk_text("First line.\nSecond line.\n\n  Third   line. ", lower)
    assert [c.text for c in chunks] == ["First line.", "Second line.", "Third line."]


@pytest.mark.parametrize("mark", ["!", "?", "…", "."])
def test_sentence_ends_with_closing_quotes_stay_together(mark):
    text = " ".join([f"“He said no{mark}” Then" + " x" * 100] * 3)
    chunks = chunk_text(text, lower)
    assert all(len(c.phonemes) <= 510 for c in chunks)
    assert all(c.text.endswith(f"{mark}”") for c in chunks[:-1])


def test_phoneme_input_is_cut_the_same_way():
    ps = " ".join(["hˈɛlO wˈɜɹld."] * 60)
    chunks = chunk_phonemes(ps)
    assert len(chunks) > 1 and all(len(c.phonemes) <= 510 and c.phonemes.endswith(".") for c in chunks)
    assert " ".join(c.phonemes for c in chunks) == ps and all(c.text == "" for c in chunks)


def test_words_keep_their_tokens_when_pieces_are_packed():
    from tilewave.text.chunking import Phonemized, Word

    def with_words(pieces):
        out = []
        for p in pieces:
            spans, pos = [], 0
            for w in p.split():
                spans.append(Word(w, pos + 1, pos + len(w)))
                pos += len(w) + 1
            out.append(Phonemized(p.lower(), tuple(spans)))
        return out

    text = " ".join(f"Word{i} and more, said Bob{i}." for i in range(40))
    chunks = chunk_text(text, with_words, limit=120)
    assert len(chunks) > 3
    for c in chunks:
        assert [w.text for w in c.words] == c.text.split()
        assert [c.phonemes[w.first - 1:w.last] for w in c.words] == c.text.lower().split()


def test_a_title_or_abbreviation_does_not_end_a_sentence():
    text = "Dr. Smith met Mr. Jones, e.g. at home. " * 3 + "x" * 60 + "."
    chunks = chunk_text(text.strip(), lower, limit=60)
    assert [c.text for c in chunks][:3] == ["Dr. Smith met Mr. Jones, e.g. at home."] * 3


@pytest.mark.parametrize("text, sentences", [
    ("We met on Jan. 3rd, 2025 at noon. Then we left.", ["We met on Jan. 3rd, 2025 at noon.", "Then we left."]),
    ("It ended in Sept. 2024. Nobody knew.", ["It ended in Sept. 2024.", "Nobody knew."]),
    ("Meet me at 9 a.m. on Monday. Bring tea.", ["Meet me at 9 a.m. on Monday.", "Bring tea."]),
    ("We left at 9 a.m. Then it rained.", ["We left at 9 a.m.", "Then it rained."]),  # a capital: ambiguous, cut
    ("He moved to Jan. Then 3 days passed.", ["He moved to Jan.", "Then 3 days passed."]),
    ("She counted to 3. 4 came next.", ["She counted to 3.", "4 came next."]),  # a number after no month
    ("Call ext. 204 or see Fig. 3. Done.", ["Call ext. 204 or see Fig. 3.", "Done."]),
    ("Why? because. Wow! great", ["Why?", "because.", "Wow!", "great"]),  # only a full stop goes on
])
def test_a_full_stop_before_a_lowercase_word_or_after_a_month_before_a_number_ends_no_sentence(text, sentences):
    from tilewave.text.chunking import _cut

    assert _cut(text, 0) == sentences


def test_phonemes_given_directly_end_a_sentence_at_every_full_stop():
    # Kokoro's symbols are lowercase letters: a full stop before one still ends the sentence in phoneme input
    from tilewave.text.chunking import chunk_phonemes

    chunks = chunk_phonemes("hˈɛlO wˈɜɹld. " * 3 + "ðˈɛn.", limit=30)
    assert [c.phonemes for c in chunks] == ["hˈɛlO wˈɜɹld. hˈɛlO wˈɜɹld.", "hˈɛlO wˈɜɹld. ðˈɛn."]


def test_a_date_across_a_full_stop_is_read_whole_in_speech():
    # the pieces are normalized one by one: "Jan." and "3rd, 2025" cut apart were read as a name and an ordinal
    from tilewave.text.frontend import text_chunks

    said = []

    def phonemize(pieces):  # what the phonemizer is asked to say, said as lowercase letters
        said.extend(pieces)
        return [p.lower() for p in pieces]

    text_chunks("We met on Jan. 3rd, 2025 at 9 a.m. on Monday. Then we left.", phonemize)
    assert said[:2] == ["We met on January third twenty twenty-five at nine a m on Monday.", "Then we left."]


def _cut_over_the_whole_prefix(text, level):
    """chunking._cut as it was written first: the title looked for over all of text[:m.end()]."""
    from tilewave.text.chunking import _LEVELS, _NOT_A_SENTENCE_END, _goes_on

    pieces, start = [], 0
    for m in _LEVELS[level].finditer(text):
        if level == 0 and (_NOT_A_SENTENCE_END.search(text[:m.end()]) or _goes_on(text, m)):
            continue
        pieces.append(text[start:m.end()].strip())
        start = m.end()
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def test_sentences_are_cut_where_the_whole_prefix_search_cut_them():
    # the title check looks a few characters back from each full stop (the whole prefix was quadratic): random
    # texts of titles, words that end like titles, marks and quotes cut exactly as before
    from tilewave.text.chunking import _cut

    rng = random.Random(1234)
    tokens = ["Dr.", "Mr.", "Mrs.", "e.g.", "i.e.", "approx.", "etc.", "No.", "Amr.", "Xapprox.", "(Dr.", "vs.",
              "word", "home.", "end!", "why?", "so...", 'said."', "it.)", "St.", "—", "x", "Prof.", "Rev.", "3."]
    for _ in range(400):
        text = " ".join(rng.choice(tokens) for _ in range(rng.randint(1, 30)))
        assert _cut(text, 0) == _cut_over_the_whole_prefix(text, 0), text


def _fit_one_at_every_level(piece, said, level, to_phonemes, limit):
    """chunking._fit_one as it was first written: an overlong piece phonemized again at every finer level,
    whether that level cuts it or not."""
    from tilewave.text.chunking import _LEVELS, Phonemized, TextChunk, _cut, _fit

    said = said if isinstance(said, Phonemized) else Phonemized(said)
    if len(said.phonemes) <= limit:
        return [TextChunk(piece, said.phonemes, said.words)]
    if level < len(_LEVELS):
        return _fit(_cut(piece, level + 1), level + 1, to_phonemes, limit)
    return [TextChunk(piece if i == 0 else "", said.phonemes[i:i + limit]) for i in range(0, len(said.phonemes), limit)]


def test_a_level_that_does_not_cut_a_piece_is_skipped_with_the_same_chunks(monkeypatch, caplog):
    # skipping a level that leaves an overlong piece whole saves phonemizing the same text again (a stream's first
    # chunk waited for it): random texts chunk as before, and no piece is phonemized twice
    from tilewave.text import chunking

    caplog.set_level(logging.ERROR, "tilewave.text")  # the giant words' warnings
    rng = random.Random(99)
    marks = ["", "", "", "", ",", ";", ".", "!", ":", "—"]
    for _ in range(300):
        # every word its own (a number on it): a text phonemized twice is a piece phonemized twice
        words = [rng.choice(["a", "to", "river", "morning", "x" * rng.randint(1, 70)]) + f"{i}" + rng.choice(marks)
                 for i in range(rng.randint(1, 40))]
        text = " ".join(words)
        limit, first_limit = rng.randint(8, 80), rng.choice([None, rng.randint(6, 40)])
        seen = []

        def counted(pieces):
            seen.extend(pieces)
            return lower(pieces)

        got = chunk_text(text, counted, limit, first_limit)
        if first_limit is None:  # (with one, the first sentence's rest is phonemized again as one phrase)
            assert len(seen) == len(set(seen)), ([p for p in set(seen) if seen.count(p) > 1], text, limit)
        with monkeypatch.context() as m:
            m.setattr(chunking, "_fit_one", _fit_one_at_every_level)
            assert got == chunk_text(text, lower, limit, first_limit), (text, limit, first_limit)


@pytest.fixture(scope="module")
def us():
    return EspeakPhonemizer("en-us")


def word_phonemes(chunk):
    return [(w.text, chunk.phonemes[w.first - 1:w.last]) for w in chunk.words]


def test_words_pair_off_with_espeaks_words(us):
    from tilewave.text.frontend import text_chunks

    (c,) = text_chunks("Well, “quoted” words — and more!", us)
    assert word_phonemes(c) == [("Well,", us(["well"])[0]), ("“quoted”", us(["quoted"])[0]), ("words", "wˈɜɹdz"),
                                ("and", "ænd"), ("more!", "mˈɔɹ")]


def test_words_espeak_joins_or_splits_are_found_in_its_phonemes(us):
    from tilewave.text.frontend import text_chunks

    (c,) = text_chunks("The best of the times.", us)
    assert "ʌvðə" in c.phonemes  # espeak says "of the" as one word
    assert word_phonemes(c) == [("The", "ðə"), ("best", "bˈɛst"), ("of", "ʌv"), ("the", "ðə"), ("times.", "tˈImz")]
    (c,) = text_chunks("The 1980s were fun.", us, normalize=False)
    assert c.phonemes.split()[1:4] == ["nˈIntinhˈʌndɹɪd", "ˈAɾi", "z"]  # espeak says "1980s" as three words
    assert word_phonemes(c)[1] == ("1980s", "nˈIntinhˈʌndɹɪd ˈAɾi z")


def test_every_chunk_of_a_long_text_knows_its_words(us):
    from tilewave.text.frontend import text_chunks

    text = " ".join(f"Chapter {i}: of the {i} men, {i * 7}% went to the sea at {i % 12 + 1}:15 pm." for i in range(60))
    chunks = text_chunks(text, us)
    assert len(chunks) > 2
    for c in chunks:
        written = [w.replace("_", " ") for w in re.sub(r"(:15) pm", r"\1_pm", c.text).split()]
        assert [w.text for w in c.words] == written
        assert all(a.last < b.first for a, b in zip(c.words, c.words[1:]))
        assert all(c.phonemes[w.first - 1] != " " and c.phonemes[w.last - 1] not in " ,.:%" for w in c.words)


def _all_at_once(text, to_phonemes, first_limit):
    """chunk_text without laziness: every sentence of a paragraph (after the first chunk) phonemized in one call."""
    from tilewave.text.chunking import _cut, _first, _fit, _pack

    chunks = []
    for paragraph in re.split(r"\n+", text):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            sentences, made = _cut(paragraph, 0), []
            if first_limit is not None and not chunks:
                head, made, rest = _first(sentences[0], to_phonemes, 510, first_limit)
                chunks, sentences = [head], ([rest] if rest else []) + sentences[1:]
            chunks += _pack(made + (_fit(sentences, 0, to_phonemes, 510) if sentences else []), 510)
    return chunks


@pytest.mark.parametrize("text", [
    "One short sentence.",
    " ".join(f"Sentence {i} goes on, and on, about the weather; then it stops." for i in range(25)),
    "A first line without an end\nand a second paragraph. With two sentences.",
    "word " * 300 + "end.",
    "Dr. Smith arrived. " + "The tide came in over the flat grey sand and the gulls rose. " * 12,
])
@pytest.mark.parametrize("first_limit", [None, 64])
def test_lazy_chunks_are_the_chunks_of_phonemizing_each_paragraph_at_once(us, text, first_limit):
    from tilewave.text.chunking import iter_chunk_text

    calls = []

    def counted(pieces):
        calls.append(len(pieces))
        return us(pieces)

    lazy = iter_chunk_text(text, counted, first_limit=first_limit)
    first = next(lazy)
    before_rest = len(calls)
    assert [first, *lazy] == _all_at_once(text, us, first_limit)
    if first_limit is not None and len(calls) > before_rest:
        # the first chunk came before the rest of its paragraph was phonemized
        assert sum(calls[:before_rest]) < sum(calls)


@pytest.mark.parametrize("text, limit, head", [
    # no clause mark: as many leading words as fit, not the first word alone (which it was), nor ending on "the"
    ("The morning train left the station a few minutes late and everyone sighed.", 32, "The morning train left"),
    ("The old lighthouse keeper climbed the winding stairs every evening to light the lamp.", 64,
     "The old lighthouse keeper climbed the winding stairs every evening"),
    # a clause mark: the head ends there, though more words would fit
    ("The river was calm, and the boats drifted slowly by the old mill.", 32, "The river was calm,"),
    # a first clause too long itself: its leading words
    ("The river was calm and the boats drifted slowly by the old mill; nobody moved.", 32,
     "The river was calm and the boats"),
])
def test_a_long_first_sentence_gives_a_first_chunk_of_its_leading_words_up_to_the_limit(us, text, limit, head):
    from tilewave.text.frontend import text_chunks

    chunks = text_chunks(text, us, first_limit=limit)
    assert chunks[0].text == head and len(chunks[0].phonemes) <= limit
    assert " ".join(c.text for c in chunks).split() == text.split()  # nothing lost, nothing twice
    words = chunks[0].words
    assert [w.text for w in words] == head.split() and words[0].first == 1
    assert all(chunks[0].phonemes[w.last - 1] not in " ," for w in words)


def test_a_first_sentence_opening_with_marks_alone_still_gives_a_first_chunk_of_words():
    from tilewave.text.chunking import chunk_text

    said = lambda pieces: [p.replace("—", "").strip() for p in pieces]  # noqa: E731 - a dash says nothing
    chunks = [c for c in chunk_text("— — " + "word " * 40 + "end.", said, first_limit=20) if c.phonemes]
    assert chunks[0].text == " ".join(["word"] * 4) and len(chunks[0].phonemes) <= 20


def test_the_rest_of_a_cut_first_sentence_is_said_as_one_phrase(us):
    text = "The morning train left the station a few minutes late and everyone sighed. It rained."
    chunks = chunk_text(text, us, first_limit=32)
    assert chunks[0].text == "The morning train left"
    rest = "the station a few minutes late and everyone sighed."
    assert chunks[1].text == f"{rest} It rained." and chunks[1].phonemes == f"{us([rest])[0]} {us(['It rained.'])[0]}"


def test_a_long_first_sentence_is_not_phonemized_whole_before_its_first_chunk():
    # what a stream's first audio waits for: the sentence's leading words (about the limit's characters and one
    # more), not the whole sentence nor all of its words
    from tilewave.text.chunking import iter_chunk_text

    words = [f"w{i}" for i in range(40)]
    calls = []

    def counted(pieces):
        calls.append(list(pieces))
        return lower(pieces)

    lazy = iter_chunk_text(" ".join(words) + ". Then more.", counted, first_limit=12)
    first = next(lazy)
    assert first.text == "w0 w1 w2 w3" and calls == [words[:5]]
    rest = list(lazy)
    assert " ".join(c.text for c in [first, *rest]) == " ".join(words) + ". Then more."
    assert calls[1] == [" ".join(words[4:]) + ".", "Then more."]  # the sentence's rest as one piece, then the next
