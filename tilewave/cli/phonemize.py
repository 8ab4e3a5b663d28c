"""`tilewave phonemize`: print the Kokoro phonemes the engine would speak for a text, chunk by chunk.

What a Kokoro user debugs a pronunciation with: the output is exactly what `tilewave say` hands the model
(normalization and inline markup applied), one line per chunk, so a word that sounds wrong can be looked
up and given its own phonemes with `[word](/phonemes/)`.
"""
from __future__ import annotations

import sys

from tilewave.errors import InputError, TilewaveError
from tilewave.text.languages import LANGUAGE_CHOICES


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("phonemize", help="print the Kokoro phonemes the engine would speak for TEXT",
                              description="Print the Kokoro phonemes that `tilewave say` would speak for TEXT, "
                                          "one line per chunk (a pause is shown as [pause: N s], a change of "
                                          "voice or speed as [voice: NAME, speed: X]).")
    p.add_argument("text", metavar="TEXT", help='the words; "-" reads them from stdin')
    p.add_argument("--lang", default="en-us", choices=LANGUAGE_CHOICES,
                   help="language (full or one-letter code) of the phonemizer")
    p.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="give the phonemizer the text as written (no reading of numbers, money, dates, abbreviations "
                        "or Markdown)")
    p.set_defaults(run=run)


def run(args) -> int:
    from tilewave.text import check_language, phonemizer_for
    from tilewave.text.frontend import speakable_chunks

    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        if not text.strip():
            raise InputError('no text given; write `tilewave phonemize "Hello there."`')
        lang = check_language(args.lang)
        chunks = speakable_chunks(text, phonemizer_for(lang), lang, args.normalize)  # what `say` takes
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    said_in = (None, 1.0)
    for chunk in chunks:
        if chunk.phonemes and (chunk.voice, chunk.speed) != said_in:
            said_in = (chunk.voice, chunk.speed)
            print(f"[voice: {chunk.voice or 'default'}, speed: {chunk.speed:g}]")
        if chunk.phonemes:
            print(chunk.phonemes)
        if chunk.pause:
            print(f"[pause: {chunk.pause:g} s]")
    return 0
