"""Word timestamps: in order, monotone, inside the audio, no drift over chunk joins and pauses; the files."""
import json

import numpy as np
import pytest
import srt

import tilewave
from tests.engine.fake_model import FakeKokoro
from tilewave.engine import SAMPLE_RATE, Session, join_chunks
from tilewave.engine.pipeline import CROSSFADE_SAMPLES
from tilewave.engine.timestamps import (FRAME_SAMPLES, WordTime, chunk_starts, format_timestamps, word_timestamps,
                                        write_timestamps)
from tilewave.errors import InputError

STORY = " ".join(f"Sentence {i} tells of the sea, $3.99 fish and Dr. Brown's boat at 9:45 am." for i in range(14))


@pytest.fixture(scope="module")
def fake():
    with Session(device="cpu", voice="jf_alpha", lang="en-us", model=FakeKokoro()) as session:
        yield session


def check_words(words, text_words, audio_size):
    assert [w.word for w in words] == text_words
    assert all(0 <= w.start < w.end <= audio_size / SAMPLE_RATE for w in words)
    assert all(a.end <= b.start for a, b in zip(words, words[1:]))


@pytest.mark.parametrize("seed", range(4))
def test_chunk_starts_are_where_join_chunks_puts_each_chunk(seed):
    rng = np.random.default_rng(seed)
    sizes = [int(s) for s in rng.integers(1, 2000, size=9)] + [100, 5, 3000]  # some shorter than the crossfade
    starts = chunk_starts(sizes)
    for k, size in enumerate(sizes):
        one_hot = [np.ones(s, np.float32) if j == k else np.zeros(s, np.float32) for j, s in enumerate(sizes)]
        joined = join_chunks(one_hot)
        assert np.flatnonzero(joined)[0] == starts[k]
    assert starts[-1] + sizes[-1] == join_chunks([np.zeros(s, np.float32) for s in sizes]).size


def test_words_are_in_order_monotone_and_inside_the_audio(fake):
    text = "Hello there, [Kokoro](/kˈOkəɹO/) paid $3.99 at 9:45 am — in the 1980s. Of the people, by the people."
    chunks = list(fake.submit(text, seed=0))
    words = word_timestamps(chunks)
    audio = join_chunks([c.audio for c in chunks])
    check_words(words, ["Hello", "there,", "Kokoro", "paid", "$3.99", "at", "9:45 am", "in", "the", "1980s.",
                        "Of", "the", "people,", "by", "the", "people."], audio.size)


def test_a_word_is_the_sum_of_its_tokens_durations(fake):
    (c,) = fake.submit("Hi [Kokoro](/kˈOkəɹO/) friend.", seed=0)
    d = c.durations.numpy()
    word = {w.text: w for w in c.words}["Kokoro"]
    assert c.phonemes[word.first - 1:word.last] == "kˈOkəɹO"
    (hi, kokoro, _) = word_timestamps([c])
    assert kokoro.end * SAMPLE_RATE == d[:word.last + 1].sum() * FRAME_SAMPLES
    # the fake's tone never stops, so the word also takes the loud space token before it (and no more)
    assert kokoro.start * SAMPLE_RATE == d[:word.first - 1].sum() * FRAME_SAMPLES == hi.end * SAMPLE_RATE


@pytest.mark.parametrize("pauses", [False, True])
def test_no_drift_over_many_chunks(fake, pauses):
    text = STORY
    if pauses:
        text = text.replace(" Sentence 7", " [pause:0.75s] Sentence 7").replace(" Sentence 3", " [pause:1.5s] Sentence 3")
    chunks = list(fake.submit(text, seed=5))
    assert len([c for c in chunks if c.phonemes]) >= 3
    audio = join_chunks([c.audio for c in chunks])
    words = word_timestamps(chunks)
    check_words(words, [w.replace("_", " ") for w in STORY.replace("9:45 am", "9:45_am").split(" ")], audio.size)
    # Each chunk's audio is found, sample for sample, where its words put it in the joined signal (the fake's
    # audio is seeded noise on a tone: one sample off fails).
    k = 0
    for c in chunks:
        d = c.durations.numpy()
        first = words[k]
        start = round(first.end * SAMPLE_RATE) - d[:c.words[0].last + 1].sum() * FRAME_SAMPLES
        inner = slice(CROSSFADE_SAMPLES, c.audio.size - CROSSFADE_SAMPLES)
        np.testing.assert_array_equal(audio[start:start + c.audio.size][inner], c.audio[inner])
        k += len(c.words)
    assert k == len(words)
    # the last word ends where the last chunk's speech ends, less its final full stop and end pad
    d = chunks[-1].durations.numpy()
    assert words[-1].end * SAMPLE_RATE == audio.size - (d[-2:].sum()) * FRAME_SAMPLES


def test_timestamps_from_speak(monkeypatch):
    from tilewave.engine import session as engine_session

    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: FakeKokoro())
    audio, rate, words = tilewave.speak("Good morning, Dr. Jones.", voice="jf_alpha", lang="en-us", device="cpu", timestamps=True)
    check_words(words, ["Good", "morning,", "Dr.", "Jones."], audio.size)
    audio2, rate2 = tilewave.speak("Good morning, Dr. Jones.", voice="jf_alpha", lang="en-us", device="cpu")
    assert rate == rate2 == SAMPLE_RATE and audio.size == audio2.size


def test_real_model_last_word_ends_with_the_speech():
    with Session(device="cpu", voice="jf_alpha", lang="en-us") as session:
        chunks = list(session.submit("Hello there, my friend.", seed=1))
    audio = join_chunks([c.audio for c in chunks])
    words = word_timestamps(chunks)
    check_words(words, ["Hello", "there,", "my", "friend."], audio.size)
    loud = np.flatnonzero(np.abs(audio) > 0.01 * np.abs(audio).max())
    assert abs(words[-1].end * SAMPLE_RATE - (loud[-1] + 1)) <= FRAME_SAMPLES
    assert abs(words[0].start * SAMPLE_RATE - loud[0]) <= FRAME_SAMPLES


WORDS = [WordTime("Hello,", 0.1, 0.525), WordTime("$3.99", 0.6, 1.875), WordTime("café.", 62.0, 3725.5)]


def test_srt_vtt_and_json_files(tmp_path):
    write_timestamps(str(tmp_path / "w.srt"), WORDS)
    cues = list(srt.parse((tmp_path / "w.srt").read_text(encoding="utf-8")))
    assert [(c.content, c.start.total_seconds(), c.end.total_seconds()) for c in cues] == \
        [(w.word, w.start, w.end) for w in WORDS]
    vtt = format_timestamps(WORDS, ".vtt")
    assert vtt.startswith("WEBVTT\n\n") and "00:00:00.600 --> 00:00:01.875\n$3.99\n" in vtt
    assert "00:01:02.000 --> 01:02:05.500\ncafé.\n" in vtt
    write_timestamps(str(tmp_path / "w.json"), WORDS)
    data = json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))
    assert data == {"words": [{"word": w.word, "start": w.start, "end": w.end} for w in WORDS]}
    with pytest.raises(InputError, match=r"\.srt, \.vtt, \.json"):
        write_timestamps(str(tmp_path / "w.txt"), WORDS)


def test_say_writes_timestamps(tmp_path, monkeypatch, capsys):
    from tests.test_cli_say import say
    from tilewave.engine import session as engine_session

    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: FakeKokoro())
    out = tmp_path / "t.vtt"
    assert say("One, two. [pause:0.5s] Three.", "-o", str(tmp_path / "a.wav"), "--timestamps", str(out)) == 0
    text = out.read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line and "-->" not in line] == ["WEBVTT", "One,", "two.", "Three."]
    assert say("One.", "-o", str(tmp_path / "b.wav"), "--timestamps", str(tmp_path / "t.doc")) == 2
    assert ".srt, .vtt, .json" in capsys.readouterr().err and not (tmp_path / "b.wav").exists()
