"""Kokoro's nine languages: codes, each G2P's phonemes (vocabulary only, the official rewrites), and a sentence
of each spoken by the real model with that language's default voice."""
import logging

import numpy as np
import pytest
import torch

from tilewave.engine import Session
from tilewave.engine.voice_catalog import DEFAULT_VOICES
from tilewave.engine.voices import load_voice
from tilewave.errors import InputError
from tilewave.text import EspeakPhonemizer, LANGUAGES, check_language, has_phones, phonemizer_for, vocab

SENTENCES = {
    "en-us": "The weather is lovely today.",
    "en-gb": "Shall we take the train to London?",
    "es": "¡Hola! ¿Dónde está la estación de tren?",
    "fr": "Bonjour, je voudrais un café, s'il vous plaît.",
    "hi": "नमस्ते, आज मौसम बहुत अच्छा है।",
    "it": "Buongiorno, vorrei un biglietto per Roma.",
    "pt-br": "Bom dia, o pão está quente e gostoso.",
    "ja": "こんにちは。今日はいい天気ですね。",
    "zh": "你好，今天的天气很好。",
}


# Short, for the model on a 2-core CPU: the audio length sets the generator's cost.
GREETINGS = {"en-us": "Good morning.", "en-gb": "Thank you.", "es": "Buenos días.", "fr": "Merci beaucoup.",
             "hi": "नमस्ते।", "it": "Buongiorno.", "pt-br": "Bom dia.", "ja": "こんにちは。", "zh": "你好，谢谢你。"}


@pytest.fixture(scope="module")
def phonemizers():
    return {lang: phonemizer_for(lang) for lang in LANGUAGES}


def test_codes_long_short_and_aliases():
    assert [check_language(c) for c in "abefhipjz"] == list(LANGUAGES)
    assert check_language("EN_GB") == "en-gb" and check_language("fr-fr") == "fr" and check_language("pt") == "pt-br"
    with pytest.raises(InputError) as err:
        check_language("de")
    assert "'de'" in str(err.value) and "pt-br (p)" in str(err.value) and "zh (z)" in str(err.value)
    with pytest.raises(InputError, match="espeak-ng does not phonemize 'ja'"):
        EspeakPhonemizer("ja")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_language_gives_only_vocabulary_symbols(lang, phonemizers, caplog):
    with caplog.at_level(logging.WARNING, logger="tilewave.text"):
        (ps,) = phonemizers[lang]([SENTENCES[lang]])
    assert caplog.text == ""  # nothing outside the vocabulary had to be dropped
    assert ps and has_phones(ps) and set(ps) <= set(vocab()), sorted(set(ps) - set(vocab()))
    assert "^" not in ps and "  " not in ps
    assert ps == phonemizers[lang]([SENTENCES[lang]])[0]  # deterministic


@pytest.mark.parametrize("lang, text, expected", [
    ("es", "¡Hola!", "ˈola!"),                  # ¡ is outside the vocabulary: dropped before espeak
    ("it", "ciao", "ʧˈao"),                     # t^ʃ -> ʧ
    ("it", "pizza", "pˈiʦːa"),                  # t^s -> ʦ
    ("pt-br", "bem", "bˈAŋ"),                   # e^ɪ -> A
    ("fr", "bon vin", "bˈɔ̃ vˈɛ̃"),              # nasal vowels keep their combining tilde (in the vocabulary)
    ("hi", "नमस्ते", "nəmˈʌsteː"),              # length marks kept (only American English drops them)
    ("ja", "こんにちは", "koɲɲiʨiβa"),
    ("zh", "你好", "ni↓xau↓"),                  # tone 3 -> ↓
    ("zh", "2", "ɚ↘"),                          # Arabic numbers read in Chinese (cn2an)
])
def test_known_words(lang, text, expected, phonemizers):
    assert phonemizers[lang]([text]) == [expected]


@pytest.mark.parametrize("lang", ["es", "ja", "zh"])  # one of espeak's, and the two others
def test_a_batch_is_its_texts_one_by_one(lang, phonemizers):
    texts = ["", SENTENCES[lang], GREETINGS[lang], "", SENTENCES[lang]]
    assert phonemizers[lang](texts) == [phonemizers[lang]([t])[0] for t in texts]
    assert phonemizers[lang](texts)[0] == "" and phonemizers[lang](texts)[1] != phonemizers[lang](texts)[2]


@pytest.fixture(scope="module")
def model():
    from tilewave.engine.session import load_model

    return load_model(None, "cpu")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_sentence_in_each_language_with_its_default_voice(lang, model):
    with Session(device="cpu", lang=lang, model=model) as session:
        assert torch.equal(session.voice, load_voice(DEFAULT_VOICES[lang]))
        chunks = list(session.submit(GREETINGS[lang], seed=0))
    assert len(chunks) == 1
    audio, ps = chunks[0].audio, chunks[0].phonemes
    assert set(ps) <= set(vocab()) and np.isfinite(audio).all()
    seconds = audio.size / 24_000
    assert 0.03 * len(ps) < seconds < 0.6 + 0.15 * len(ps), (seconds, len(ps))  # the pads' frames: the 0.6 s
    frames = audio[: audio.size // 480 * 480].reshape(-1, 480)
    rms = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))
    assert 0.02 < rms.max() < 1.0 and rms.min() < 0.1 * rms.max()  # speech: loud parts and pauses
