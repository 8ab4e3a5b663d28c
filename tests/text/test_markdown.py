"""Markdown read as text (tilewave/text/markdown.py): what a person reads aloud of a chat model's answer."""
import pytest

from tilewave.text.markdown import plain_text

ANSWER = """# Getting started
**Install** it with `pip install tilewave`, then read *the* [user guide](https://example.com/guide).
![A diagram of the engine](engine.png) shows ~~three~~ four parts.
Two lines
of one paragraph.

1. Load a voice
2. Speak

- fast
- small

| Voice | Language |
|---|---|
| af_heart | English |

```
tilewave say hello
```
> A quote, with <b>bold</b> HTML.
"""

READ = """Getting started
Install it with pip install tilewave, then read the user guide.
A diagram of the engine shows three four parts.
Two lines
of one paragraph.
1. Load a voice
2. Speak
fast
small
Voice, Language
af_heart, English
tilewave say hello
A quote, with bold HTML."""


def test_an_answer_in_markdown_is_read_as_its_text():
    assert plain_text(ANSWER) == READ


@pytest.mark.parametrize("text", ["Hello there. It costs $3.99 at 9:45 am.", "It is 5 * 3 = 15, and 2 < 3 > 1.",
                                  "#1 hit, 10% off, snake_case names.", "Line one\nline two"])
def test_plain_text_is_left_as_it_is(text):
    assert plain_text(text) == text


def test_through_the_front_end_markup_survives_and_no_normalize_keeps_the_marks():
    from tilewave.text.frontend import text_chunks

    said = []

    def phonemize(pieces):
        said.extend(pieces)
        return [p.lower() for p in pieces]

    chunks = text_chunks("Say **[Kokoro](/kˈOkəɹO/)** now. [pause:0.5s] Read `the docs`.", phonemize)
    assert [c.pause for c in chunks] == [0.5, 0.0]
    assert "kˈOkəɹO" in chunks[0].phonemes and "*" not in " ".join(said) + chunks[0].text
    assert [w.text for w in chunks[0].words] == ["Say", "Kokoro", "now."]
    said.clear()
    text_chunks("Read **this**.", phonemize, normalize=False)
    assert said == ["Read **this**."]
