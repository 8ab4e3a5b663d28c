"""Markdown -> the text a person reads aloud from it: "**Bold** and [the docs](https://x.dev)" -> "Bold and the docs".

Text handed to a speech engine is often a chat model's answer, written in Markdown; read as written, espeak says
"asterisk asterisk bold" and "hash". markdown-it-py (CommonMark, with tables and strikethrough) parses it; each block
becomes a line (the chunker ends a chunk at each), and inside a line only what is read is kept: text, inline code,
a link's text (not its address), an image's description, a table's cells joined by commas, a list item's number.
Line breaks inside a paragraph stay line breaks, as in plain text. Text with none of Markdown's marks is returned as
it is, without a parse (a stream's first audio waits for this).
"""
from __future__ import annotations

import re
from functools import lru_cache

# Marks that may make Markdown: emphasis, headings, code, quotes, tables, links and images, HTML, list bullets
_MARKS = re.compile(r"[*_#`>|~\[<]|^\s*(?:[-+]|\d+[.)])\s", re.M)


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _inline(children) -> str:
    out = []
    for tok in children or ():
        if tok.type in ("text", "text_special", "code_inline"):
            out.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif tok.type == "image":
            out.append(_inline(tok.children))  # its description
    return "".join(out)


def plain_text(text: str) -> str:
    """What is read aloud of `text` taken as Markdown (see the module's doc)."""
    if not _MARKS.search(text):
        return text
    lines: list[str] = []
    row: list[str] | None = None  # a table row's cells, while in one
    number = ""  # an ordered list item's number, said before its first line
    for tok in _parser().parse(text):
        if tok.type == "list_item_open":
            number = f"{tok.info}{tok.markup} " if tok.info else ""
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            lines.append(", ".join(cell for cell in row if cell))
            row = None
        elif tok.type == "inline":
            said = _inline(tok.children).strip()
            if row is not None:
                row.append(said)
            elif said:
                lines.append(number + said)
                number = ""
        elif tok.type in ("fence", "code_block"):
            lines.extend(line for line in tok.content.splitlines() if line.strip())
        elif tok.type == "html_block":
            said = re.sub(r"<[^>]*>", " ", tok.content).strip()
            if said:
                lines.append(said)
    return "\n".join(lines)
