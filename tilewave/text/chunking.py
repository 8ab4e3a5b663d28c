"""Split text into chunks the model can take (<= 510 phonemes), cutting where a speaker would pause.

Paragraphs (line breaks) always end a chunk. Inside a paragraph the text is cut into sentences, a
sentence whose phonemes pass the limit is cut at ':' ';', then at ',' '—', then between words, and
only a single "word" longer than the limit is cut inside. The pieces are then packed greedily, in
order, into chunks of at most 510 phonemes joined by a space: few long chunks give the model whole
sentences to phrase and cost fewer calls. The same cutting applies to phoneme strings given directly.
A full stop after a title or an abbreviation ("Dr.", "e.g."), one followed by a lowercase word ("at 9 a.m. on
Monday") and one after a month's abbreviation followed by a number ("Jan. 3rd", "Sept. 2024") do not end a sentence:
the text is normalized piece by piece, and such a piece cut in two is read wrongly ("Jan." said as a name).

A phonemizer may say where each word's phonemes are (a `Phonemized` instead of a string); chunks then
carry their words as token ranges, which is what word timestamps are made from.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

from tilewave.text.normalize import MONTH_ABBREVIATIONS
from tilewave.text.vocab import MAX_PHONEMES

log = logging.getLogger("tilewave.text")

# Each level cuts after its marks (and any closing quote or bracket) where whitespace follows.
# Sentence, clause and phrase marks: Western ones count when a space follows; the full-width marks of Japanese and
# Mandarin text, which puts no space after them, count as they stand.
# (A match starts only where a run of marks starts: tried inside a long run, it costs time quadratic in its length.)
_LEVELS = [re.compile(rf"(?<![{marks}])[{marks}]+[\"”’')\]]*\s+|(?<![{wide}])[{wide}]+[」』”’）]*\s*")
           for marks, wide in ((r".!?…", "。！？"), (r":;", "：；"), (r",—", "，、"))]
_CLAUSE_END = re.compile(r"[:;,—：；，、][\"”’')\]」』）]*$")
_NOT_A_SENTENCE_END = re.compile(r"(?:^|\W)(?:Dr|Mr|Mrs|Ms|Prof|St|Mt|Ft|Jr|Sr|vs|etc|e\.g|i\.e|approx|No|Gen|Capt|Lt|ext|[Ff]ig|[Vv]ol|pp|"
                                 r"Col|Sgt|Rev|Gov|Sen|Rep)\.\s+$")
_TITLE_REACH = 8  # > 1 + len("approx"): a title's full stop is the match's first mark (a quote or a 2nd mark: no title)
_MONTH_ABBREVIATION = re.compile(rf"(?:^|\W)(?:{MONTH_ABBREVIATIONS})\.$")


class Word(NamedTuple):
    text: str   # as written in the text
    first: int  # its first token; token 0 is the start pad, so the chunk's phoneme i is token i + 1
    last: int   # its last token (inclusive), punctuation after it not counted


@dataclass(frozen=True)
class Phonemized:
    phonemes: str
    words: tuple[Word, ...] = ()


@dataclass(frozen=True)
class TextChunk:
    text: str                     # the words this chunk says ('' for phoneme input)
    phonemes: str                 # Kokoro symbols, 1 to 510 of them ('' for a chunk that is only a pause)
    words: tuple[Word, ...] = ()  # where each word is, when the phonemizer said so
    pause: float = 0.0            # seconds of silence after the chunk's speech ([pause:...] in the text)
    voice: str | None = None      # the voice it is said in ([voice:...]; None: the request's)
    speed: float = 1.0            # times the request's speed ([speed:...])


def _cut(text: str, level: int, written: bool = True) -> list[str]:
    """text's pieces at `level`; `written`: text, not phonemes (whose symbols are lowercase letters), so a full stop
    may go on (_goes_on)."""
    if level == len(_LEVELS):
        return text.split()
    pieces, start = [], 0
    for m in _LEVELS[level].finditer(text):
        # the title before a lone full stop, looked for in the few characters before it (the longest title and
        # the character before it): searched over text[:m.end()] it would be quadratic in the text's length, and a
        # stream's first audio waits for the first chunk. `pos` keeps ^ at the text's real start.
        if level == 0 and (_NOT_A_SENTENCE_END.search(text, max(0, m.start() - _TITLE_REACH), m.end())
                           or (written and _goes_on(text, m))):
            continue
        pieces.append(text[start:m.end()].strip())
        start = m.end()
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _goes_on(text: str, m: re.Match) -> bool:
    """Whether the sentence goes on past the full stop m matched: a lowercase word follows it, or a number follows a
    month's abbreviation."""
    after = text[m.end():m.end() + 1]
    if text[m.start()] != "." or not after:
        return False
    return after.islower() or (after.isdigit() and _MONTH_ABBREVIATION.search(text, max(0, m.start() - 5),
                                                                              m.start() + 1) is not None)


def _fit(pieces: list[str], level: int, to_phonemes, limit: int) -> list[TextChunk]:
    """Phonemize pieces; cut again, finer, those whose phonemes pass the limit."""
    return [c for piece, said in zip(pieces, to_phonemes(pieces))
            for c in _fit_one(piece, said, level, to_phonemes, limit)]


def _fit_one(piece: str, said, level: int, to_phonemes, limit: int) -> list[TextChunk]:
    """A piece with its phonemes, as chunks of at most `limit`: itself, or its cuts at the first finer level that
    cuts it. A level that leaves it whole is skipped: phonemizing the same text again would say the same (a long
    sentence without ':' or ',' would be phonemized once per level on its way to its words, and a stream's
    first chunk waits for that)."""
    said = _said(said)
    ps = said.phonemes
    if len(ps) <= limit:
        return [TextChunk(piece, ps, said.words)]
    cuts, level = _finer(piece, level)
    if cuts != [piece]:
        return _fit(cuts, level, to_phonemes, limit)
    log.warning("a single word of %d phonemes is longer than a chunk (%d); cut inside it: %r",
                len(ps), limit, piece[:40])
    return [TextChunk(piece if i == 0 else "", ps[i:i + limit]) for i in range(0, len(ps), limit)]


def _finer(piece: str, level: int) -> tuple[list[str], int]:
    """(the piece's cuts, their level) at the first level finer than `level` that cuts it; ([piece], the word
    level) when none does (one word)."""
    while level < len(_LEVELS):
        level += 1
        cuts = _cut(piece, level)
        if cuts != [piece]:
            return cuts, level
    return [piece], level


def _said(said) -> Phonemized:
    return said if isinstance(said, Phonemized) else Phonemized(said)


def _pack(pieces: list[TextChunk], limit: int) -> list[TextChunk]:
    chunks: list[TextChunk] = []
    for piece in pieces:
        if not piece.phonemes:
            continue
        last = chunks[-1] if chunks else None
        if last is not None and len(last.phonemes) + 1 + len(piece.phonemes) <= limit:
            shift = len(last.phonemes) + 1
            words = last.words + tuple(Word(w.text, w.first + shift, w.last + shift) for w in piece.words)
            chunks[-1] = TextChunk(f"{last.text} {piece.text}".strip(), f"{last.phonemes} {piece.phonemes}", words)
        else:
            chunks.append(piece)
    return chunks


def chunk_text(text: str, to_phonemes: Callable[[list[str]], list[str]],
               limit: int = MAX_PHONEMES, first_limit: int | None = None, *, written: bool = True) -> list[TextChunk]:
    """Chunks of `text`; `to_phonemes` maps a batch of strings to their phoneme strings. With `first_limit`
    the first chunk is the first sentence alone, cut at clauses (else between words) to at most that many
    phonemes (a stream's first audio then comes early); the rest, a cut first sentence's rest as one phrase
    first, is chunked as usual. written=False: `text` is phonemes (see _cut)."""
    return list(iter_chunk_text(text, to_phonemes, limit, first_limit, written=written))


def iter_chunk_text(text: str, to_phonemes: Callable[[list[str]], list[str]],
                    limit: int = MAX_PHONEMES, first_limit: int | None = None, *,
                    written: bool = True) -> Iterator[TextChunk]:
    """chunk_text's chunks as they are made. With `first_limit` only what the first chunk says is phonemized
    before it is yielded (a 2,000-character text's phonemes take tens of ms, the first chunk needs a few);
    each piece is phonemized on its own text, whichever call it is in."""
    first = first_limit is not None
    for paragraph in re.split(r"\n+", text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        sentences = _cut(paragraph, 0, written)
        if first:
            first = False
            head, made, rest = _first(sentences[0], to_phonemes, limit, first_limit)
            yield head
            later = ([rest] if rest else []) + sentences[1:]
            yield from _pack(made + (_fit(later, 0, to_phonemes, limit) if later else []), limit)
        else:
            yield from _pack(_fit(sentences, 0, to_phonemes, limit), limit)


# A first sentence of more characters than this many times the first limit is taken to pass the limit and is cut
# without being phonemized whole first (English text says 0.8-1.0 phoneme symbols a character, spaces and marks
# counted; one that says fewer only gets a shorter first chunk). A stream's first chunk waits for those phonemes.
_SURELY_PAST = 1.5
# Words a first chunk cut between words does not end on: it is said as a whole utterance, and a trailing article,
# preposition or conjunction got a falling end ("... climbed the." was heard, tests/asr); the rest begins with it
_WEAK_ENDINGS = frozenset("""a an the to of in on at for with by from into onto over under about as than and or
but nor so if that which who whose this these those his her its their our my your is are was were be been""".split())


def _first(sentence: str, to_phonemes, limit: int, first_limit: int) -> tuple[TextChunk, list[TextChunk], str]:
    """(the first chunk, chunks already made of what follows it in the sentence, the sentence's text after those).
    The first chunk is the sentence if it says at most `first_limit` phonemes, else its leading cuts at the first
    level that cuts it (each fitted to `first_limit`) up to the first clause's end, as many as fit (not the first
    word alone), less the weak words it would end on. Only the leading cuts are phonemized before it is made;
    the rest of the sentence is chunked as text again, said as one phrase (not as the cuts the first chunk was
    chosen from)."""
    cuts, level = _finer(sentence, 0)
    if cuts == [sentence] or len(sentence) <= _SURELY_PAST * first_limit:
        said = _said(to_phonemes([sentence])[0])
        if len(said.phonemes) <= first_limit:
            return TextChunk(sentence, said.phonemes, said.words), [], ""
        if cuts == [sentence]:  # one word past the first limit: cut inside it, as a word past any limit is
            pieces = _fit_one(sentence, said, level, to_phonemes, first_limit)
            return pieces[0], pieces[1:], ""
    head: list[TextChunk] = []
    size, after = 0, []  # size: as _pack joins them (a space between pieces that say something); after: the
    for fitted in _fit_leading(cuts, level, to_phonemes, first_limit):  # pieces of a cut left out
        for j, piece in enumerate(fitted):
            if head and not (piece.text and not (head[-1].phonemes and _CLAUSE_END.search(head[-1].text))
                             and size + bool(size and piece.phonemes) + len(piece.phonemes) <= first_limit):
                after = fitted[j:]
                break
            head.append(piece)
            size += bool(size and piece.phonemes) + len(piece.phonemes)
        if after:
            break
    while len(head) > 1 and head[-1].text.lower() in _WEAK_ENDINGS:  # "... climbed the" | "winding stairs"
        head.pop()
    packed = _pack(head, first_limit)  # [] when the leading cuts say nothing (only marks)
    made = []
    for piece in after:  # the other slices of a word cut inside (phonemes only) go as they are
        if piece.text:
            break
        made.append(piece)
    rest = sentence[len(" ".join(p.text for p in head if p.text)):].strip()
    return (packed[0] if packed else head[0]), made, rest


def _fit_leading(pieces: list[str], level: int, to_phonemes, limit: int) -> Iterator[list[TextChunk]]:
    """_fit_one's chunks of each piece in order, phonemized a few pieces a call: first the leading pieces of about
    `limit` characters and the one after them (about what a first chunk of `limit` phonemes says, and the piece
    that decides where it stops), then twice as many a call."""
    n, chars = 0, -1
    while n < len(pieces) and chars <= limit:
        chars += len(pieces[n]) + 1
        n += 1
    i = 0
    while i < len(pieces):
        part = pieces[i:i + n]
        for piece, said in zip(part, to_phonemes(part)):
            yield _fit_one(piece, said, level, to_phonemes, limit)
        i, n = i + len(part), 2 * n


def chunk_phonemes(phonemes: str, limit: int = MAX_PHONEMES, first_limit: int | None = None) -> list[TextChunk]:
    """Chunks of a phoneme string given directly (cut at the same marks)."""
    return [TextChunk("", c.phonemes)
            for c in chunk_text(phonemes, lambda pieces: pieces, limit, first_limit, written=False)]
