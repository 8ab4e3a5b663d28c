"""The session with the real Kokoro model (CPU, int8 ONNX weights dequantized): speak_many through shared batches
gives every item the audio `speak` gives it alone; and the session checks each user value where it enters."""
import numpy as np
import pytest
import torch

import tilewave
from tests.engine.fake_model import FakeKokoro
from tilewave.engine import Session
from tilewave.errors import InputError
from tilewave.spec.tolerance import scaled_max_error, tolerance


def test_speak_many_equals_speak_per_item_with_seeds():
    items = ["Hi there.", {"text": "Good night.", "voice": "jm_kumo", "seed": 5}, {"text": "Yes.", "speed": 1.3}]
    with Session(device="cpu") as session:
        many = session.speak_many(items, seed=3)
        assert [b.size for b in session.batches()] == [3]  # all three in one batch
    alone = [tilewave.speak("Hi there.", seed=3, device="cpu"),
             tilewave.speak("Good night.", voice="jm_kumo", seed=5, device="cpu"),
             tilewave.speak("Yes.", speed=1.3, seed=3, device="cpu")]
    for (a, rate), (b, _) in zip(many, alone, strict=True):
        assert rate == 24_000 and a.size == b.size > 2400 and np.isfinite(a).all()
        # the batched pass's own bound for audio against a solo run (tests/models/test_kokoro_batch.py)
        assert scaled_max_error(torch.from_numpy(a), torch.from_numpy(b)) <= tolerance("float32", "recurrence")


def test_speak_many_checks_every_item_before_any_audio():
    model = FakeKokoro()
    with Session(device="cpu", model=model) as session:
        with pytest.raises(InputError, match="item 1: speed 9"):
            session.speak_many(["Hello.", {"text": "Hi.", "speed": 9}])
        with pytest.raises(InputError, match="item 0 .* must be a text or a dict"):
            session.speak_many([{"words": "Hi."}])
        with pytest.raises(InputError, match="items must be a list"):
            session.speak_many("Hello.")
        assert model.calls == []
        assert len(session.speak_many(["Hello.", "Bye."])) == 2


def test_a_batch_takes_the_default_frame_budget_on_a_cpu_and_what_a_memory_budget_gives():
    from tilewave.engine.policy import BatchPolicy

    assert Session(model=FakeKokoro(), device="cpu").frame_budget == BatchPolicy().frame_budget
    budget = Session(model=FakeKokoro(), device="cpu", memory_budget="30GB").frame_budget
    assert budget == 30 * 10**9 // BatchPolicy().bytes_per_frame


def test_values_are_checked_when_the_session_is_made():
    for kwargs, message in (({"device": "tpu"}, "device"), ({"precision": "half"}, "precision"),
                            ({"lang": "tlh"}, "language"), ({"voice": "nobody"}, "unknown voice"),
                            ({"memory_budget": "-1GB"}, "not a size"),
                            ({"dtype": "float16"}, "Kokoro dtype 'float16' is not one of float32, bfloat16"),
                            ({"dtype": torch.bfloat16}, "Kokoro dtype .* is not one of float32, bfloat16")):
        with pytest.raises(InputError, match=message):
            Session(model=FakeKokoro(), **{"device": "cpu", **kwargs})


def test_warm_up_serving_runs_each_batch_size_in_one_batch_outside_the_profile():
    model = FakeKokoro()
    with Session(device="cpu", model=model, profile=True) as session:
        session.scheduler.fill = 10**6  # a GPU's rule: a small batch takes chunks of any length bucket
        session.warm_up_serving(batches=(1, 2, 4))
        assert [len(b) for b in model.batches] == [1, 2, 4]
        assert len({len(ids) for ids in model.batches[-1]}) == 4  # sentences of different lengths
        assert "generator" not in session.profiler.format()  # the warm-up is not the first request's profile
        session.speak("Hello.")
        assert "generator" in session.profiler.format()


def test_a_request_in_another_language_gets_its_phonemizer_and_default_voice():
    from tilewave.engine.pipeline import Pipeline
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.text import encode

    spanish = "Hola, ¿cómo estás? Son las tres."
    model = FakeKokoro()
    with Session(device="cpu", model=model) as session:  # an English session
        english = [c.phonemes for c in session.submit(spanish)]
        chunks = list(session.submit(spanish, lang="e", seed=1))  # the one-letter code
        assert [c.phonemes for c in chunks] == [c.phonemes for c in Pipeline("es").chunks(spanish)] != english
        ref_s = model.calls[-1]["ref_s"]  # no voice named: Spanish's default, ef_dora
        assert torch.equal(ref_s, style_for(load_voice("ef_dora"), len(chunks[0].phonemes)).reshape(ref_s.shape))
        mixed = session.speak_many([spanish, {"text": "Bonjour.", "lang": "fr", "voice": "af_heart"}], lang="es")
        said = [ids for batch in model.batches[-2:] for ids in batch]
        assert len(mixed) == 2 and encode(Pipeline("fr").chunks("Bonjour.")[0].phonemes)[0].tolist() in said
        with pytest.raises(InputError, match="unknown language 'xx'"):
            session.submit("Hi.", lang="xx")


def test_a_text_names_the_voice_and_speed_of_what_follows_and_never_a_file(tmp_path):
    from tilewave.engine.voices import load_voice, style_for

    model = FakeKokoro()
    with Session(device="cpu", model=model) as session:
        chunks = list(session.submit("It was late. [voice:bm_george][speed:0.8] Who is there? [voice:default] "
                                     "[speed:4] Nobody.", speed=1.2))
        assert [c.text for c in chunks] == ["It was late.", "Who is there?", "Nobody."]
        calls = model.calls[-3:]
        for call, chunk, voice in zip(calls, chunks, ("af_heart", "bm_george", "af_heart")):
            expected = style_for(load_voice(voice), len(chunk.phonemes)).reshape(call["ref_s"].shape)
            assert torch.equal(call["ref_s"], expected), voice
        assert [c["speed"] for c in calls] == pytest.approx([1.2, 0.96, 2.0])  # 1.2 x 4 kept within 0.5..2
        there = tmp_path / "voice.npz"
        np.savez(there, v=np.ones((510, 1, 256), np.float32))
        for spec in (str(there), "nobody"):
            with pytest.raises(InputError, match="unknown voice"):
                session.speak(f"Hi. [voice:{spec}] There.")


def test_a_language_the_text_names_is_read_by_that_languages_phonemizer():
    from tilewave.engine.pipeline import Pipeline
    from tilewave.text import encode

    model = FakeKokoro()
    with Session(device="cpu", model=model) as session:
        chunks = list(session.submit("He said: [lang:es] hola, ¿qué tal? [lang:default] and left."))
        spanish = Pipeline("es").chunks("hola, ¿qué tal?")[0].phonemes
        assert [c.phonemes for c in chunks][1] == spanish and chunks[0].phonemes != spanish
        assert [c["ids"][0].tolist() for c in model.calls[-3:]][1] == encode(spanish)[0].tolist()
        assert set(session._pipelines) == {"en-us", "es"}  # the request's and the one the text named


def test_each_session_counts_its_own_placements():
    from tilewave.ops.dispatch import use_triton

    def probe(record):  # an op the model's batch dispatches (ops.dispatch records where it ran)
        use_triton("probe", torch.zeros(1))

    with Session(device="cpu", model=FakeKokoro(on_batch=probe)) as a, Session(device="cpu", model=FakeKokoro()) as b:
        a.speak("Hello.", seed=1)
        b.speak("Hello.", seed=1)
        assert a.placements() == [("probe", "torch", "tensors on cpu", 1)] and b.placements() == []
        a.reset_placements()
        assert a.placements() == []
