"""The English front-end: text -> chunks of Kokoro phonemes that know where each word is.

    chunks = text_chunks("I paid $3.99 [pause:0.5s] for [Kokoro](/kˈOkəɹO/).", EspeakPhonemizer("en-us"))

SSML becomes the inline markup (ssml.py); the inline markup is taken out (controls split the text into
sections, each pronunciation becomes a placeholder: see inline.py); Markdown is read as text (markdown.py) and
emoji are dropped (clean.py); each section is cut into chunks (chunking.py), and each piece the chunker asks
about is normalized (normalize.py), phonemized and aligned word by word.

Alignment. A word of the text is what lies between spaces in the original ("$3.99," is one word, said as
four). espeak keeps a space between the words it says, so when the text's spoken words and espeak's
words are as many, they pair off in order. They sometimes are not: espeak joins some function words
("of the" -> "ʌvðə") and splits what it reads as several ("1980s" without normalization). Then each word
is phonemized on its own, and where those word-by-word phonemes fall in the sentence's phonemes is found
by matching the two strings (difflib); the sentence's phonemes, with their context, are what is spoken.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from tilewave.errors import InputError
from tilewave.text.chunking import Phonemized, TextChunk, Word, chunk_phonemes, iter_chunk_text
from tilewave.text.clean import readable
from tilewave.text.inline import Pronunciation, placeholder_index, protect, restore, split_controls
from tilewave.text.markdown import plain_text
from tilewave.text.normalize import normalize_spans
from tilewave.text.ssml import is_ssml, to_inline
from tilewave.text.vocab import describe_symbols, has_phones, unknown_symbols

_PUNCTUATION = set(';:,.!?—…"()“”')
# Written tokens made only of these espeak does not say as a word (it says "&", "/", "%", "*" and "+").
_UNSAID = _PUNCTUATION | set("-–'‘’«»[]{}¡¿_<>|^")
_PLACEHOLDER = re.compile("([\ue000-\uf8ff])")


@dataclass
class _Unit:
    display: str           # as written
    spoken: str = ""       # what the phonemizer is given ('' for a given pronunciation)
    phonemes: str = ""     # a given pronunciation's phonemes

    @property
    def spoken_words(self) -> int:
        return sum(1 for w in self.spoken.split() if not set(w) <= _UNSAID)


def _units(piece: str, pronunciations: list[Pronunciation], normalize: bool, lang: str) -> list[_Unit]:
    """The words of a piece, as written and as the phonemizer is to read them."""
    units: list[_Unit] = []
    glued = False  # whether the next atom belongs to the last unit (no space between them)
    for part in _PLACEHOLDER.split(piece):
        index = placeholder_index(part) if len(part) == 1 else None
        if index is not None:
            given = pronunciations[index]
            units.append(_Unit(given.word, phonemes=given.phonemes))
            glued = False
            continue
        spans = normalize_spans(part, lang) if normalize else [(part, part)]
        for original, spoken in spans:
            if original != spoken:  # a rewritten piece is one indivisible atom
                if glued and units and not units[-1].phonemes:
                    units[-1].display += original
                    units[-1].spoken += spoken
                else:
                    units.append(_Unit(original, spoken))
                glued = True
                continue
            for token in re.split(r"(\s+)", original):
                if not token:
                    continue
                if token.isspace():
                    glued = False
                elif glued and units and not units[-1].phonemes:
                    units[-1].display += token
                    units[-1].spoken += token
                else:
                    units.append(_Unit(token, token))
                    glued = True
    return units


def _word_spans(phonemes: str) -> list[tuple[int, int]]:
    """(first, last) character of each space-separated word of `phonemes` that has phones, punctuation
    at its edges left out."""
    spans = []
    for m in re.finditer(r"\S+", phonemes):
        if not has_phones(m.group(0)):
            continue
        first, last = m.start(), m.end() - 1
        while phonemes[first] in _PUNCTUATION:
            first += 1
        while phonemes[last] in _PUNCTUATION:
            last -= 1
        spans.append((first, last))
    return spans


def _edge(phonemes: str, start: int, stop: int) -> tuple[int, int] | None:
    """The first and last phone of phonemes[start:stop], or None when it holds none."""
    inner = [i for i in range(start, stop) if not phonemes[i].isspace() and phonemes[i] not in _PUNCTUATION]
    return (inner[0], inner[-1]) if inner else None


def _align(units: list[_Unit], phonemes: str, phonemize) -> list[tuple[int, int] | None]:
    """The (first, last) character of each unit's phonemes in the run's `phonemes` (None: the unit says nothing)."""
    spans = _word_spans(phonemes)
    counts = [u.spoken_words for u in units]
    if sum(counts) == len(spans):
        out, k = [], 0
        for n in counts:
            out.append((spans[k][0], spans[k + n - 1][1]) if n else None)
            k += n
        return out
    alone = phonemize([u.spoken for u in units])
    starts, joined = [], ""
    for ps in alone:
        starts.append(len(joined))
        joined += ps + " "
    starts.append(len(joined))
    where = _position_map(joined, phonemes)
    word_starts = [s for s, _ in spans]
    out, previous = [], -1
    for i, ps in enumerate(alone):
        if not has_phones(ps):
            out.append(None)
            continue
        a, b = (_snap(phonemes, where[p], word_starts) for p in (starts[i], starts[i + 1]))
        first, last = _edge(phonemes, a, max(b, a)) or (a, a - 1)
        # Words never share a phoneme; one the matching found no phones of gets no time, where it would be.
        first = max(first, previous + 1)
        last = max(last, first - 1)
        out.append((first, last))
        previous = max(previous, last)
    return out


def _position_map(a: str, b: str) -> list[int]:
    """For each position of `a` (and its end), the matching position of `b`: inside a matching block the same
    character, between blocks the start of the next one (monotone)."""
    where = [len(b)] * (len(a) + 1)
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    pos = 0
    for block in blocks:
        for p in range(pos, block.a):
            where[p] = block.b
        for k in range(block.size):
            where[block.a + k] = block.b + k
        pos = block.a + block.size
    return where


def _snap(phonemes: str, position: int, word_starts: list[int]) -> int:
    """Back to the start of the word when only marks without sound (stress) lie between: a stress mark the
    word-by-word phonemes lack is still the word's."""
    start = max((s for s in word_starts if s <= position), default=position)
    return start if not has_phones(phonemes[start:position]) else position


def phonemize_pieces(pieces: list[str], phonemize: Callable[[list[str]], list[str]], pronunciations=(),
                     normalize: bool = True, lang: str = "en-us") -> list[Phonemized]:
    """Each piece's phonemes and words; `phonemize` is called once for all the pieces' text (and again, word
    by word, only for runs whose words and phonemes do not pair off)."""
    plans = []  # per piece: a list of runs, each a list of units; a given pronunciation is a run of its own
    texts = []
    for piece in pieces:
        runs: list[list[_Unit]] = []
        for unit in _units(piece, list(pronunciations), normalize, lang):
            if unit.phonemes or not runs or runs[-1][0].phonemes:
                runs.append([unit])
            else:
                runs[-1].append(unit)
        for run in runs:
            if not run[0].phonemes:
                texts.append(" ".join(u.spoken for u in run))
        plans.append(runs)
    said = iter(phonemize(texts) if texts else [])
    out = []
    for runs in plans:
        joined, words = "", []
        for run in runs:
            ps = run[0].phonemes if run[0].phonemes else next(said)
            if not ps:
                continue
            spans = [_edge(ps, 0, len(ps))] if run[0].phonemes else _align(run, ps, phonemize)
            # runs are joined by a space, except that punctuation stays on the word before it
            if joined and not (ps[0] in _PUNCTUATION and ps[0] not in "(“\""):
                joined += " "
            words += [Word(u.display, len(joined) + s[0] + 1, len(joined) + s[1] + 1) for u, s in zip(run, spans) if s]
            joined += ps
        out.append(Phonemized(joined, tuple(words)))
    return out


def text_chunks(text: str, phonemize: Callable[[list[str]], list[str]], normalize: bool = True,
                lang: str = "en-us", first_limit: int | None = None) -> list[TextChunk]:
    """The chunks the model will say for `text`, with inline markup applied; a pause ends its chunk (or is a
    chunk of its own, without phonemes, where no words come before it). `first_limit`: the first chunk of
    speech is only its first sentence or clause, of at most that many phonemes (chunk_text)."""
    return list(iter_text_chunks(text, phonemize, normalize, lang, first_limit))


def iter_text_chunks(text: str, phonemize: Callable[[list[str]], list[str]], normalize: bool = True,
                     lang: str = "en-us", first_limit: int | None = None,
                     check_voice: Callable[[str], object] | None = None,
                     phonemizer_for: Callable[[str], Callable] | None = None) -> Iterator[TextChunk]:
    """text_chunks' chunks as they are made: with `first_limit`, the first is yielded before the rest of the
    text is phonemized (chunking.iter_chunk_text). `check_voice(name)` is called for every voice the text names
    ([voice:...]) before the first chunk is made, so that a bad one fails the request before any audio.
    `phonemizer_for(lang)`: the phonemizer of another language a text names ([lang:...]; default: a new one of
    tilewave.text.languages per call)."""
    if is_ssml(text):  # SSML becomes the inline markup below (ssml.py)
        text = to_inline(text, lang)
    protected, pronunciations = protect(text)
    if normalize:  # after protect: "[word](/phonemes/)" is Markdown's link form too
        protected = readable(plain_text(protected), lang)

    others: dict[str, Callable] = {}  # the phonemizers of the other languages the text names

    def to_phonemes_in(code: str | None) -> Callable[[list[str]], list[Phonemized]]:
        if code is None or code == lang:
            return lambda pieces: phonemize_pieces(pieces, phonemize, pronunciations, normalize, lang)
        if code not in others:
            from tilewave.text.languages import phonemizer_for as new_phonemizer

            others[code] = (phonemizer_for or new_phonemizer)(code)
        return lambda pieces: phonemize_pieces(pieces, others[code], pronunciations, normalize, code)

    def restored(c: TextChunk) -> TextChunk:
        return replace(c, text=restore(c.text, pronunciations),
                       words=tuple(w._replace(text=restore(w.text, pronunciations)) for w in c.words))

    sections = split_controls(protected)
    if check_voice is not None:
        for voice in {s.voice for s in sections} - {None}:
            check_voice(voice)
    spoke = False  # a chunk with phonemes was made: first_limit is spent
    for section in sections:
        pause = section.pause
        last = None  # a section followed by a pause holds its chunk back: the pause goes on its last one
        if section.text.strip():
            for c in iter_chunk_text(section.text, to_phonemes_in(section.lang),
                                     first_limit=None if spoke else first_limit):
                c = replace(restored(c), voice=section.voice, speed=section.speed)
                spoke = spoke or bool(c.phonemes)
                if pause > 0:
                    if last is not None:
                        yield last
                    last = c
                else:
                    yield c
        if pause > 0:
            yield replace(last, pause=pause) if last is not None else TextChunk("", "", pause=pause)


def iter_speakable(text: str, phonemize: Callable[[list[str]], list[str]] | None, lang: str = "en-us",
                   phonemes: bool = False, first_limit: int | None = None, normalize: bool = True,
                   check_voice: Callable[[str], object] | None = None,
                   phonemizer_for: Callable[[str], Callable] | None = None,
                   ) -> tuple[list[TextChunk], Iterator[TextChunk]]:
    """The chunks a model will say for `text` (or Kokoro phonemes, `phonemes=True`; `phonemize` unused then), as
    (head, rest): head up to and with the first chunk that has speech, checked (InputError when the text has
    nothing to say); rest an iterator over the others, phonemized as it is read. A chunk is speech, or a pause
    alone kept as silence; chunks with neither are dropped."""
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        what = "the text is empty" if not text else f"the text is only whitespace ({text[:40]!r})"
        raise InputError(f"{what}; give some words to say")
    if phonemes:
        unknown = unknown_symbols(text.replace("\n", " "))
        if unknown:
            raise InputError(f"the phonemes contain symbols outside Kokoro's vocabulary: {describe_symbols(unknown)}; "
                             "write them with the vocabulary's symbols (see tilewave.text.vocab())")
        found = iter(chunk_phonemes(text, first_limit=first_limit))
    else:
        found = iter_text_chunks(text, phonemize, normalize=normalize, lang=lang, first_limit=first_limit,
                                 check_voice=check_voice, phonemizer_for=phonemizer_for)
    head, got = [], []
    for c in found:
        got.append(c.phonemes)
        c = _speakable(c)
        if c is not None:
            head.append(c)
            if c.phonemes:
                return head, (c for c in map(_speakable, found) if c is not None)
    raise InputError(f"nothing to say in {text[:80]!r}: it gives no pronounceable phonemes ({' '.join(got)!r}); "
                     "give words or phonemes, not only punctuation or symbols")


def speakable_chunks(text: str, phonemize, lang: str = "en-us", normalize: bool = True) -> list[TextChunk]:
    """Every chunk of iter_speakable, as a list."""
    head, rest = iter_speakable(text, phonemize, lang, normalize=normalize)
    return head + list(rest)


def _speakable(c: TextChunk) -> TextChunk | None:
    """The chunk as a job takes it: speech, or a pause alone kept as silence (made without the model); None for
    a chunk with neither."""
    if has_phones(c.phonemes):
        return c
    return replace(c, phonemes="", words=()) if c.pause > 0 else None
