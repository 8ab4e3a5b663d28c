"""Inline control: [word](/phonemes/) is said with those phonemes, [pause:...] is that much silence."""
import numpy as np
import pytest

from tests.engine.fake_model import FakeKokoro
from tilewave.engine import SAMPLE_RATE, Session, join_chunks
from tilewave.engine.pipeline import CROSSFADE_SAMPLES
from tilewave.errors import InputError
from tilewave.text import EspeakPhonemizer
from tilewave.text.frontend import text_chunks
from tilewave.text.inline import Section, pause_seconds, split_controls


@pytest.fixture(scope="module")
def us():
    return EspeakPhonemizer("en-us")


@pytest.fixture(scope="module")
def fake():
    with Session(device="cpu", voice="jf_alpha", model=FakeKokoro()) as session:
        yield session


def test_a_given_pronunciation_is_spoken_verbatim(us):
    (c,) = text_chunks("Say [tomato](/təmˈɑtO/) twice, [Kokoro](/kˈOkəɹO/)!", us)
    assert c.text == "Say tomato twice, Kokoro!"
    assert c.phonemes == f"{us(['Say'])[0]} təmˈɑtO {us(['twice,'])[0]} kˈOkəɹO!"
    words = {w.text: c.phonemes[w.first - 1:w.last] for w in c.words}
    assert words == {"Say": "sˈA", "tomato": "təmˈɑtO", "twice,": "twˈIs", "Kokoro": "kˈOkəɹO"}


def test_the_brackets_are_not_read_out(us):
    (c,) = text_chunks("A [word](/wˈɜɹd/) here.", us)
    assert us(["slash"])[0] not in c.phonemes and "/" not in c.phonemes
    assert c.phonemes == f"{us(['A'])[0]} wˈɜɹd {us(['here.'])[0]}"


def test_a_given_pronunciation_is_not_normalized(us):
    (c,) = text_chunks("The year [1984](/nˈIntin/) came.", us)
    assert "nˈIntin" in c.phonemes and us(["nineteen eighty-four"])[0] not in c.phonemes


@pytest.mark.parametrize("markup, message", [
    ("[cat](/kXt/)", r"'cat'.*'X' \(U\+0058\)"), ("[cat](/k@t/)", "'@'"), ("[cat](//)", "no phonemes"),
    ("[cat](/ ˈ /)", "no phonemes"),
])
def test_bad_phonemes_are_a_clear_error(us, markup, message):
    with pytest.raises(InputError, match=message):
        text_chunks(f"A {markup} sat.", us)


@pytest.mark.parametrize("markup, seconds", [("[pause:0.5s]", 0.5), ("[pause:500ms]", 0.5), ("[Pause: 2 s]", 2.0),
                                             ("[pause:1.25]", 1.25), ("[pause:0s]", 0.0), ("[pause:10s]", 10.0)])
def test_pauses_are_read(markup, seconds):
    assert split_controls(f"One. {markup} Two.") == [Section("One. ", seconds), Section(" Two.")]


@pytest.mark.parametrize("value, message", [("10.5s", "0 to 10 s"), ("20000ms", "0 to 10 s"), ("-1s", "cannot read"),
                                            ("soon", "cannot read"), ("", "cannot read")])
def test_pauses_out_of_bounds_are_a_clear_error(value, message):
    with pytest.raises(InputError, match=message):
        pause_seconds(value)


def test_a_pause_ends_its_chunk_or_stands_alone(us):
    chunks = text_chunks("[pause:0.2s]One. [pause:0.5s] Two, three. [pause:1s][pause:0.25s]", us)
    assert [(c.text, bool(c.phonemes), c.pause) for c in chunks] == [
        ("", False, 0.2), ("One.", True, 0.5), ("Two, three.", True, 1.0), ("", False, 0.25)]


def test_a_pause_adds_exactly_its_silence_to_the_audio(fake):
    plain = list(fake.submit("One two. [pause:0s] Three four.", seed=3))  # the same two chunks, no silence
    paused = list(fake.submit("One two. [pause:0.5s] Three four.", seed=3))
    assert [c.pause for c in paused] == [0.5, 0.0] and len(plain) == 2
    joined_plain, joined = join_chunks([c.audio for c in plain]), join_chunks([c.audio for c in paused])
    assert joined.size - joined_plain.size == 0.5 * SAMPLE_RATE
    # The silence is where the first chunk's speech ends, and it is digital zeros except the last crossfade.
    speech = paused[0].audio.size - int(0.5 * SAMPLE_RATE)
    assert np.abs(joined[speech - 10:speech]).max() > 0
    assert not joined[speech:speech + int(0.5 * SAMPLE_RATE) - CROSSFADE_SAMPLES].any()


def test_a_leading_pause_is_silence_without_a_model_call(fake):
    fake.model.calls.clear()
    chunks = list(fake.submit("[pause:250ms] Hello.", seed=1))
    assert len(fake.model.calls) == 1 and chunks[0].phonemes == "" and chunks[0].durations.numel() == 0
    assert chunks[0].audio.size == SAMPLE_RATE // 4 and not chunks[0].audio.any()


def test_only_pauses_is_nothing_to_say(fake):
    with pytest.raises(InputError, match="nothing to say"):
        fake.submit("[pause:1s] ... [pause:1s]")


def test_real_model_keeps_the_pause_silent():
    with Session(device="cpu", voice="jf_alpha") as session:
        chunks = list(session.submit("Yes. [pause:0.4s] No.", seed=0))
    audio = join_chunks([c.audio for c in chunks])
    assert np.isfinite(audio).all() and np.abs(audio).max() > 0.05
    quiet = np.abs(audio) < 1e-4
    # the longest run of silence is at least the pause (less the crossfade into the next chunk)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]])))
    longest = (edges[1::2] - edges[::2]).max()
    assert longest >= 0.4 * SAMPLE_RATE - CROSSFADE_SAMPLES


def test_phonemize_prints_chunks_and_pauses(us, capsys):
    from tilewave.cli import main

    assert main(["phonemize", "One. [pause:0.5s] Say [x](/ˈɛks/)."]) == 0
    assert capsys.readouterr().out.splitlines() == [us(["One."])[0], "[pause: 0.5 s]", f"{us(['Say'])[0]} ˈɛks."]
    assert main(["phonemize", "Say [x](/ʘ/)."]) == 2
    assert "'ʘ'" in capsys.readouterr().err
    assert main(["phonemize", "Hi. [voice:bm_george][speed:0.8] Who? [voice:default][speed:1] Me."]) == 0
    assert capsys.readouterr().out.splitlines() == [us(["Hi."])[0], "[voice: bm_george, speed: 0.8]", us(["Who?"])[0],
                                                    "[voice: default, speed: 1]", us(["Me."])[0]]
    assert main(["phonemize", "😀 🎉"]) == 2 and "nothing to say" in capsys.readouterr().err  # as `say` says


def test_voice_speed_and_language_controls_set_what_follows_and_end_a_section():
    sections = split_controls("Narrator. [voice:bm_george][speed:0.8] Who? [pause:0.3s]There. [voice:default] "
                              "[speed:1.5][lang:e] Hola. [lang:default] Done.")
    assert [(s.text.strip(), s.pause, s.voice, s.speed, s.lang) for s in sections if s.text.strip()] == [
        ("Narrator.", 0.0, None, 1.0, None), ("Who?", 0.3, "bm_george", 0.8, None),
        ("There.", 0.0, "bm_george", 0.8, None), ("Hola.", 0.0, None, 1.5, "es"), ("Done.", 0.0, None, 1.5, None)]


@pytest.mark.parametrize("markup, message", [("[speed:9]", "0.25 to 4"), ("[speed:fast]", "cannot read"),
                                             ("[speed:nan]", "cannot read"), ("[voice: ]", "names no voice"),
                                             ("[lang:de]", "unknown language 'de'")])
def test_bad_controls_are_a_clear_error(markup, message):
    with pytest.raises(InputError, match=message):
        split_controls(f"One. {markup} Two.")
