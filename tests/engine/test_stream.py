"""Streaming around a model double: a long text's first chunk is short and leaves before the last is made; the
joined stream is the one-shot join; the async form yields the same chunks; `say --file` streams into its file."""
import asyncio
import threading
import time

import numpy as np
import pytest
import soundfile

import tilewave
from tests.engine.fake_model import FakeKokoro
from tests.test_cli_say import say
from tilewave.engine import Joiner, Session, join_chunks, session as engine_session
from tilewave.engine.session import FIRST_CHUNK_PHONEMES
from tilewave.engine.wav import write_audio
from tilewave.errors import InputError, TilewaveError

WAIT = 30
LONG = " ".join(f"This is sentence number {i}, which goes on for a while about the sea and the sky." for i in range(12))
STORY = " ".join(f"Line {i} of the story tells of a ship, its crew and the long voyage home." for i in range(30))


def test_a_long_texts_first_chunk_is_short_and_leaves_before_the_last_is_made():
    events, first_out = [], threading.Event()

    def hook(batch):
        later = any(e[0] == "batch" for e in events)
        events.append(("batch", len(batch)))
        if later:  # every batch after the first waits for the first chunk to be out
            events.append(("a later batch starts", first_out.wait(WAIT)))

    with Session(device="cpu", model=FakeKokoro(on_batch=hook)) as session:
        stream = session.stream(LONG, seed=2)
        chunks = []
        for chunk in stream:
            if not chunks:
                events.append(("first chunk out", len(chunk.phonemes)))
                first_out.set()
            chunks.append(chunk)
    assert stream.complete and len(chunks) == len(stream) >= 3
    assert events.index(("first chunk out", len(chunks[0].phonemes))) < events.index(("a later batch starts", True))
    assert len(chunks[0].phonemes) <= FIRST_CHUNK_PHONEMES < len(chunks[1].phonemes)
    assert chunks[0].text == "This is sentence number 0,"
    assert " ".join(c.text for c in chunks) == LONG


class _HeldPhonemizer:
    """The session's phonemizer, held on any text past the first sentence until `release` is set (or raising
    there, with `fail`)."""

    def __init__(self, real, fail: bool = False, events: list | None = None):
        self.real, self.fail, self.release, self.held = real, fail, threading.Event(), threading.Event()
        self.events = [] if events is None else events  # ("phonemize", past the first sentence?) per call

    def __call__(self, pieces):
        past_first = any("number one," in p for p in pieces)  # the text past the first sentence, as normalized
        self.events.append(("phonemize", past_first))
        if past_first:
            self.held.set()
            if self.fail:
                raise RuntimeError("the phonemizer broke")
            assert self.release.wait(WAIT)
        return self.real(pieces)


def test_a_streams_first_chunk_is_made_while_the_rest_of_its_text_is_still_being_phonemized():
    with Session(device="cpu", model=FakeKokoro()) as session:
        held = _HeldPhonemizer(session.pipeline.phonemizer)
        session.pipeline._phonemizer = held
        stream = session.stream(LONG, seed=2)
        first = next(stream)  # made while the phonemizer is held on the second sentence
        assert held.held.wait(WAIT) and not held.release.is_set() and not stream.complete
        assert first.text == "This is sentence number 0,"
        held.release.set()
        rest = list(stream)
    whole = Session(device="cpu", model=FakeKokoro()).stream(LONG, seed=2)
    expected = list(whole)
    assert [c.phonemes for c in [first, *rest]] == [c.phonemes for c in expected]
    assert all(np.array_equal(a.audio, b.audio) for a, b in zip([first, *rest], expected))


def test_a_streams_rest_is_phonemized_only_after_its_first_chunk_is_made():
    # phonemizing is Python under the GIL: beside the first chunk's kernel launches it slowed them (H200, S9)
    events, go = [], threading.Event()

    def hold_the_first_batch(batch):
        if not any(e[0] == "batch" for e in events):
            events.append(("batch", go.wait(WAIT)))
        else:
            events.append(("batch", True))

    with Session(device="cpu", model=FakeKokoro(on_batch=hold_the_first_batch)) as session:
        session.pipeline._phonemizer = held = _HeldPhonemizer(session.pipeline.phonemizer, events=events)
        held.release.set()
        stream = session.stream(LONG, seed=2)
        deadline = time.monotonic() + 0.2  # room for a wrongly early rest to show up
        while time.monotonic() < deadline and ("phonemize", True) not in events:
            time.sleep(0.005)
        assert ("phonemize", True) not in events and not stream.complete  # the head's batch is still held
        go.set()
        chunks = list(stream)
    assert events.index(("batch", True)) < events.index(("phonemize", True))
    assert " ".join(c.text for c in chunks) == LONG


def test_a_stream_whose_rest_cannot_be_phonemized_ends_with_the_error_after_its_first_chunk():
    with Session(device="cpu", model=FakeKokoro()) as session:
        earlier = session.submit("Hello there.", seed=1)
        session.pipeline._phonemizer = _HeldPhonemizer(session.pipeline.phonemizer, fail=True)
        stream = session.stream(LONG, seed=2)
        first = next(stream)
        with pytest.raises(TilewaveError, match="could not be phonemized: RuntimeError: the phonemizer broke"):
            list(stream)
        with pytest.raises(TilewaveError, match="the phonemizer broke"):
            next(stream)  # and stays ended
        assert len(list(earlier)) == 1
    assert first.text == "This is sentence number 0,"


def test_a_stream_cancelled_before_its_first_chunk_never_phonemizes_its_rest():
    go = threading.Event()
    with Session(device="cpu", model=FakeKokoro(on_batch=lambda batch: go.wait(WAIT))) as session:
        session.pipeline._phonemizer = held = _HeldPhonemizer(session.pipeline.phonemizer)
        held.release.set()
        stream = session.stream(LONG, seed=2)
        stream.cancel()
        go.set()
        with pytest.raises(TilewaveError, match="cancelled"):
            list(stream)
        assert len(list(session.submit("Hello there.", seed=1))) == 1
    assert ("phonemize", True) not in held.events


def test_the_stream_joined_as_it_comes_is_the_whole_join():
    with Session(device="cpu", model=FakeKokoro()) as session:
        chunks = list(session.stream(LONG, seed=5))
    joiner = Joiner()
    streamed = np.concatenate([joiner.push(c.audio) for c in chunks] + [joiner.finish()])
    np.testing.assert_array_equal(streamed, join_chunks([c.audio for c in chunks]))
    assert np.abs(np.diff(streamed)).max() < 0.2  # no step at a join (the double's tones start and end at 0)


def test_a_short_text_streams_as_one_chunk_and_speak_does_not_cut_the_first_sentence():
    with Session(device="cpu", model=FakeKokoro()) as session:
        assert [c.text for c in session.stream("Hello there.")] == ["Hello there."]
        spoken = list(session.submit(LONG))
    assert spoken[0].text.startswith("This is sentence number 0, which goes on")


def test_the_async_stream_yields_the_same_chunks():
    async def collect(session):
        return [c async for c in session.astream(LONG, seed=3)]

    with Session(device="cpu", model=FakeKokoro()) as session:
        async_chunks = asyncio.run(collect(session))
        sync_chunks = list(session.stream(LONG, seed=3))
    assert [c.text for c in async_chunks] == [c.text for c in sync_chunks]
    for a, b in zip(async_chunks, sync_chunks, strict=True):
        np.testing.assert_array_equal(a.audio, b.audio)


def test_tilewave_stream_checks_at_the_call_and_yields_chunks():
    with pytest.raises(InputError, match="speed"):  # at the call, before any iteration
        tilewave.stream(LONG, speed=5, model=FakeKokoro(), device="cpu")
    chunks = list(tilewave.stream(LONG, seed=1, model=FakeKokoro(), device="cpu"))
    assert len(chunks[0].phonemes) <= FIRST_CHUNK_PHONEMES and len(chunks) >= 3


@pytest.fixture
def story(tmp_path):
    path = tmp_path / "story.txt"
    path.write_text(STORY.replace(" Line 12", "\nLine 12"), encoding="utf-8")
    return path


def _temp_bytes(folder) -> int:
    """The bytes in the hidden temporaries (assets.atomic_file's `.<name>.<random><suffix>`) being written."""
    return sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("suffix", [".wav", ".flac"])
def test_say_file_streams_the_same_audio_as_a_whole_write(tmp_path, story, monkeypatch, suffix):
    batches = []

    def hook(batch):  # from the third batch on, the model waits until audio is in the file: it streams
        batches.append(_temp_bytes(tmp_path))
        if len(batches) >= 3:
            for _ in range(WAIT * 100):
                if _temp_bytes(tmp_path) > 10_000:
                    break
                threading.Event().wait(0.01)
            batches[-1] = _temp_bytes(tmp_path)

    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: FakeKokoro(on_batch=hook))
    out = tmp_path / f"streamed{suffix}"
    assert say("--file", str(story), "-o", str(out), "--seed", "4", "--device", "cpu") == 0
    assert len(batches) >= 3 and batches[-1] > 10_000  # written to while the last chunks were being made
    text = story.read_text(encoding="utf-8")
    reference = tmp_path / f"whole{suffix}"
    write_audio(reference, tilewave.speak(text, seed=4, device="cpu", model=FakeKokoro())[0], 24_000)
    streamed, rate = soundfile.read(out, dtype="int16")
    whole, _ = soundfile.read(reference, dtype="int16")
    assert rate == 24_000 and streamed.size > 24_000
    np.testing.assert_array_equal(streamed, whole)
    if suffix == ".wav":
        assert out.read_bytes() == reference.read_bytes()


def test_say_file_that_fails_midway_leaves_no_file(tmp_path, story, monkeypatch, capsys):
    batches = []

    def hook(batch):
        batches.append(len(batch))
        if len(batches) >= 3:
            raise RuntimeError("the double breaks at its third batch")

    monkeypatch.setattr(engine_session, "load_model", lambda weights, device: FakeKokoro(on_batch=hook))
    out = tmp_path / "out.wav"
    assert say("--file", str(story), "-o", str(out), "--device", "cpu") == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the model failed") and "third batch" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["story.txt"]


def test_model_errors_reach_the_caller_as_tilewave_errors():
    def hook(batch):
        raise RuntimeError("out of memory (the double)")

    with Session(device="cpu", model=FakeKokoro(on_batch=hook)) as session:
        with pytest.raises(TilewaveError, match="the model failed on 'Hello there.'.*out of memory"):
            session.speak("Hello there.")


def test_a_stream_dropped_unread_stops_its_worker():
    import gc

    def workers():
        return sum(t.name == "tilewave-scheduler" and t.is_alive() for t in threading.enumerate())

    before = workers()
    chunks = tilewave.stream(LONG, model=FakeKokoro(), device="cpu")
    assert workers() == before + 1
    del chunks
    gc.collect()
    for _ in range(WAIT * 100):
        if workers() == before:
            break
        threading.Event().wait(0.01)
    assert workers() == before
