"""The voice bank: one rule for a request's language (its own, else its stock voice's, else the session's), named
voices cached and never read from a file, paths only where the caller allows them."""
import numpy as np
import pytest
import torch

from tilewave.engine import Session, voices
from tilewave.engine.pipeline import Pipeline
from tilewave.engine.voice_bank import Voice, VoiceBank
from tilewave.engine.voice_catalog import request_language
from tilewave.errors import InputError


@pytest.mark.parametrize("lang, voice, expected", [
    (None, "ef_dora", "es"), ("en-us", "ef_dora", "en-us"), ("e", None, "es"), (None, "jm_kumo", "ja"),
    (None, "alloy", "en-us"),  # an OpenAI name: its voices speak any language
    (None, "ef_dora:0.5,af_heart:0.5", "en-us"),  # a blend across languages
    (None, "ef_dora+em_alex", "es"), (None, None, "en-us")])
def test_request_language(lang, voice, expected):
    assert request_language(lang, voice) == expected


def test_request_language_refuses_a_bad_language_or_voice():
    with pytest.raises(InputError, match="xx"):
        request_language("xx", "ef_dora")
    with pytest.raises(InputError, match="unknown voice"):
        request_language(None, "no_such_voice")


def test_named_voices_are_cached_and_never_files(tmp_path):
    bank = VoiceBank()
    first = bank.named("ef_dora")
    assert bank.named(" ef_dora ") is first and first.language == "es" and first.pack.shape == (510, 1, 256)
    path = tmp_path / "mine.npz"
    np.savez(path, v=np.random.default_rng(0).standard_normal((510, 1, 256)).astype("float32"))
    with pytest.raises(InputError, match="unknown voice"):
        bank.named(str(path))
    own = bank.resolve(str(path))  # the Python API and the CLI may name a file
    assert own.language is None and torch.equal(own.pack, torch.from_numpy(np.load(path)["v"]))
    assert bank.resolve(own) is own


def test_a_tensor_voice_is_checked():
    bank = VoiceBank()
    with pytest.raises(InputError, match="NaN"):
        bank.resolve(torch.full((510, 1, 256), float("nan")))
    assert isinstance(bank.resolve(torch.randn(510, 256, generator=torch.Generator().manual_seed(0))), Voice)


def test_a_stock_voice_reads_its_language_in_the_session():
    text = "Hola, buenos días."
    spanish = "".join(c.phonemes for c in Pipeline("es").chunks(text))
    english = "".join(c.phonemes for c in Pipeline("en-us").chunks(text))
    assert spanish != english
    session = Session(device="cpu")
    jobs, _ = session.prepare(text, voice="ef_dora")
    assert "".join(j.phonemes for j in jobs) == spanish
    jobs, _ = session.prepare(text, voice="ef_dora", lang="en-us")  # the request's language wins
    assert "".join(j.phonemes for j in jobs) == english
    assert Session(device="cpu", voice="ef_dora").pipeline.lang == "es"
    assert Session(device="cpu", voice="ef_dora", lang="en-us").pipeline.lang == "en-us"


def test_each_language_default_scans_the_voices_once(monkeypatch):
    scans = []
    real = voices.installed_voices

    def counted(cache=None):
        scans.append(cache)
        return real(cache)

    monkeypatch.setattr(voices, "installed_voices", counted)
    bank = VoiceBank()
    english = [bank.default("en-us") for _ in range(3)]
    spanish = [bank.default("es") for _ in range(3)]
    assert len(scans) == 2
    assert all(v is english[0] for v in english) and all(v is spanish[0] for v in spanish)
    assert len(VoiceBank().default("en-us").pack) == 510 and len(scans) == 3  # a new bank looks again


def test_a_named_voice_is_parsed_once_on_a_miss_and_not_on_a_hit(monkeypatch):
    import tilewave.engine.voice_bank as VB
    calls = []
    real = VB.parse_voice_language
    monkeypatch.setattr(VB, "parse_voice_language", lambda *a: calls.append(a) or real(*a))
    bank = VoiceBank()
    blend = bank.named("af_heart:2,af_bella")
    assert len(calls) == 1 and blend.language == "en-us"
    assert bank.named("af_heart:2,af_bella") is blend and len(calls) == 1
    for i in range(VB.NAMED_CACHE):  # bounded: the first spec is dropped once the cache is full
        bank.named(f"af_heart:{i + 3},af_bella")
    assert bank.named("af_heart:2,af_bella") is not blend and len(calls) == VB.NAMED_CACHE + 2
