"""SSML into the engine's inline markup (tilewave/text/ssml.py)."""
import pytest

from tilewave.errors import InputError
from tilewave.text.ssml import is_ssml, to_inline

DOCUMENT = """<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-US">
  Hello <break time="500ms"/> <phoneme alphabet="ipa" ph="təˈmɑːtoʊ">tomato</phoneme>,
  <say-as interpret-as="characters">SQL</say-as> and <sub alias="World Wide Web">WWW</sub>.
  <p><s>Call <say-as interpret-as="telephone">555-0134</say-as></s> <s>on the
  <say-as interpret-as="ordinal">3</say-as> <break strength="strong"/></s></p>
  <prosody rate="slow"><emphasis>Slowly</emphasis></prosody> <mark name="m1"/><voice name="x">done</voice>
  <say-as interpret-as="digits">42</say-as> <say-as interpret-as="cardinal">1,024</say-as>
  <phoneme alphabet="kokoro" ph="kˈOkəɹO">Kokoro</phoneme> <break/></speak>"""

INLINE = ("Hello [pause:0.5s] [tomato](/təmˈɑtO/), S Q L and World Wide Web. Call 5 5 5, 0 1 3 4 on the third "
          "[pause:0.7s]\n[speed:0.75] Slowly [speed:1] [voice:x] done [voice:default] 4 2 one thousand and "
          "twenty-four [Kokoro](/kˈOkəɹO/) [pause:0.4s]")


def test_a_document_becomes_the_inline_markup():
    assert is_ssml(DOCUMENT) and not is_ssml("Say <b>hi</b>.")
    assert to_inline(DOCUMENT, "en-us") == INLINE


@pytest.mark.parametrize("document, message", [
    ("<speak>Hi <break time='1s'></speak>", "not well-formed"),
    ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><speak>&lol;</speak>', "document type"),
    ("<speak>Hi</speak><speak>again</speak>", "not well-formed"),
    ("<speak><break time='11s'/></speak>", "0 to 10 s"),
    ("<speak><break time='soon'/></speak>", "cannot read the pause"),
    ("<speak><break strength='huge'/></speak>", "strength"),
    ("<speak><phoneme>word</phoneme></speak>", "no ph="),
    ("<speak><phoneme alphabet='x-sampa' ph='t@'>t</phoneme></speak>", "alphabet"),
    ("<speak><prosody rate='warp'>t</prosody></speak>", "prosody rate"),
])
def test_bad_ssml_gets_a_clear_error(document, message):
    with pytest.raises(InputError, match=message):
        to_inline(document, "en-us")


def test_through_the_front_end_breaks_are_pauses_and_phonemes_are_said():
    from tilewave.text.frontend import text_chunks

    def phonemize(pieces):
        return [p.lower() for p in pieces]

    chunks = text_chunks('<speak>Say <phoneme alphabet="kokoro" ph="kˈOkəɹO">Kokoro</phoneme>.'
                         '<break time="1.5s"/>Then rest.</speak>', phonemize)
    assert [(c.text, c.pause) for c in chunks] == [("Say Kokoro.", 1.5), ("Then rest.", 0.0)]
    assert "kˈOkəɹO" in chunks[0].phonemes
    with pytest.raises(InputError, match="outside Kokoro's vocabulary"):
        text_chunks('<speak><phoneme alphabet="kokoro" ph="k#o">x</phoneme></speak>', phonemize)
    assert [c.text for c in text_chunks("<b>bold</b> text", phonemize, normalize=False)] == ["<b>bold</b> text"]


def test_xml_lang_reads_its_content_in_that_language_and_names_only_languages_the_engine_reads():
    document = '<speak xml:lang="en-US">He said <lang xml:lang="es-ES">hola, amigo</lang> and left.</speak>'
    assert to_inline(document, "en-us") == "He said [lang:es] hola, amigo [lang:default] and left."
    assert to_inline('<speak xml:lang="fr-FR">Bonjour.</speak>', "en-us") == "[lang:fr] Bonjour. [lang:default]"
    with pytest.raises(InputError, match="unknown language 'de-DE'"):
        to_inline('<speak><lang xml:lang="de-DE">Hallo</lang></speak>', "en-us")


def test_voice_and_prosody_rate_set_their_content_and_nest():
    document = ('<speak>Narrator. <voice name="bm_george">Who is <prosody rate="slow">there</prosody>?</voice> '
                '<prosody rate="150%">Quick <prosody rate="+20%">quicker</prosody>.</prosody> End.</speak>')
    assert to_inline(document, "en-us") == (
        "Narrator. [voice:bm_george] Who is [speed:0.75] there [speed:1] ? [voice:default] [speed:1.5] Quick "
        "[speed:1.8] quicker [speed:1.5] . [speed:1] End.")
