"""The pipeline and the session around a model double: chunks, styles, speed, seed, joins, and refusals."""
import numpy as np
import pytest
import torch

import tilewave
from tests.engine.fake_model import FakeKokoro
from tilewave.engine import SAMPLE_RATE, Joiner, Session, join_chunks, load_voice, speak
from tilewave.engine.pipeline import resolve_device
from tilewave.errors import InputError, TilewaveError
from tilewave.text import vocab

TEXT = "Hello there. How are you today? The weather is fine."


@pytest.fixture(scope="module")
def session():
    with Session(lang="en-us", voice="jf_alpha", device="cpu", model=FakeKokoro()) as s:
        yield s


def test_chunks_carry_text_phonemes_durations_audio(session):
    session.model.calls.clear()
    chunks = list(session.submit(TEXT))
    assert len(chunks) == 1 and chunks[0].text == TEXT
    c = chunks[0]
    assert c.durations.shape == (len(c.phonemes) + 2,) and c.durations.dtype == torch.long
    assert c.audio.dtype == np.float32 and c.audio.size == int(c.durations.sum()) * 600
    call = session.model.calls[0]
    table = vocab()
    assert call["ids"][0, 1:-1].tolist() == [table[s] for s in c.phonemes]
    assert torch.equal(call["ref_s"], load_voice("jf_alpha")[len(c.phonemes) - 1])


def test_voice_can_change_per_call(session):
    session.model.calls.clear()
    (c,) = session.submit("Hi.", voice="jm_kumo:1,jf_alpha:1", lang="en-us")  # English text, Japanese voices
    expected = (load_voice("jm_kumo") + load_voice("jf_alpha")) / 2
    torch.testing.assert_close(session.model.calls[0]["ref_s"], expected[len(c.phonemes) - 1])


def test_seed_makes_audio_repeatable(session):
    a = [c.audio for c in session.submit(TEXT, seed=7)]
    b = [c.audio for c in session.submit(TEXT, seed=7)]
    c = [c.audio for c in session.submit(TEXT, seed=8)]
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[0], c[0])


def test_speed_reaches_the_model_and_is_bounded(session):
    fast = list(session.submit("Hello.", speed=2.0))[0].audio.size
    slow = list(session.submit("Hello.", speed=0.5))[0].audio.size
    assert slow > fast
    for speed in (0.49, 2.01, float("nan"), "fast", None):
        with pytest.raises(InputError, match="speed"):
            session.submit("Hello.", speed=speed)


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_bad_seed(session, seed):
    with pytest.raises(InputError, match="seed"):
        session.submit("Hello.", seed=seed)


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("   \n\t ", "whitespace"), ("... !!! ?", "nothing to say"), (42, "string"),
])
def test_nothing_to_say(session, text, message):
    with pytest.raises(InputError, match=message):
        session.submit(text)


def test_raw_phonemes(session):
    (c,) = session.submit("hˈɛlO wˈɜɹld.", phonemes=True)
    assert c.phonemes == "hˈɛlO wˈɜɹld." and c.text == ""
    with pytest.raises(InputError, match="'ʘ'.*'X'"):
        session.submit("hʘ wX", phonemes=True)


def test_long_text_makes_several_chunks(session):
    text = " ".join(f"This is sentence {i} of a long story about the sea." for i in range(25))
    chunks = list(session.submit(text))
    assert len(chunks) > 1 and all(len(c.phonemes) <= 510 for c in chunks)


def test_a_call_says_how_many_chunks_it_will_make(session):
    text = " ".join(["This sentence is here to make the text long enough for several model calls."] * 12)
    pending = session.submit(text)
    assert len(pending) > 1 and len(list(pending)) == len(pending)


def test_non_finite_audio_is_an_error():
    with pytest.raises(TilewaveError, match="NaN"):
        list(Session(device="cpu", model=FakeKokoro(nan=True)).submit("Hello."))


def test_speak_returns_float32_at_24khz():
    audio, rate = tilewave.speak("Hello there.", voice="jf_nezumi", speed=1.2, seed=0, model=FakeKokoro())
    assert rate == SAMPLE_RATE == 24_000 and audio.dtype == np.float32 and audio.ndim == 1
    assert np.isfinite(audio).all() and audio.size > 0
    with pytest.raises(InputError, match="unknown voice"):
        speak("Hello.", voice="nobody", model=FakeKokoro())


def test_joins_have_no_step():
    a, b = np.ones(1000, np.float32), -np.ones(800, np.float32)
    joined = join_chunks([a, b, a])
    assert joined.size == 1000 + 800 + 1000 - 2 * 240
    assert np.abs(np.diff(joined)).max() <= 2 / 240 + 1e-6
    assert np.array_equal(join_chunks([a]), a) and join_chunks([]).size == 0
    short = join_chunks([a, np.full(10, 0.5, np.float32), a])
    assert short.size == 1000 + 10 + 1000 - 10 and np.isfinite(short).all()


def test_a_join_made_as_chunks_come_equals_the_whole_join():
    rng = np.random.default_rng(5)
    audios = [rng.standard_normal(n).astype(np.float32) for n in (900, 7, 500, 240, 1200)]
    joiner = Joiner()
    pieces = [joiner.push(a) for a in audios] + [joiner.finish()]
    assert pieces[0].size == 0  # the first chunk waits for the crossfade with the second
    np.testing.assert_array_equal(np.concatenate(pieces), join_chunks(audios))


def test_device_checks():
    assert resolve_device("cpu") == torch.device("cpu")
    for bad in ("tpu", "mps"):
        with pytest.raises(InputError, match="device"):
            resolve_device(bad)
    if torch.cuda.is_available():
        assert resolve_device("cuda").type == "cuda"
    else:
        with pytest.raises(InputError, match="no CUDA device"):
            resolve_device("cuda")


def test_wav_encoding_clips_and_refuses_non_finite_audio():
    import io

    import soundfile

    from tilewave.engine.wav import encode_audio

    audio, rate = soundfile.read(io.BytesIO(encode_audio(np.array([0.5, 2.0, -3.0], np.float32), 24_000)))
    assert rate == 24_000 and np.allclose(audio, [0.5, 1.0, -1.0], atol=1e-4)
    with pytest.raises(ValueError, match="NaN"):
        encode_audio(np.array([0.0, np.nan], np.float32), 24_000)


class PrecisionRecorder(FakeKokoro):
    """Records the float32 matmul precision in force while the model runs."""

    def forward(self, *args, **kwargs):
        from tilewave import precision

        self.calls_precision = getattr(self, "calls_precision", []) + [precision.current()]
        return super().forward(*args, **kwargs)


@pytest.mark.parametrize("precision", ["ieee", "tf32x3", "tf32"])
def test_precision_is_in_force_while_the_model_runs(precision):
    model = PrecisionRecorder()
    list(Session(device="cpu", model=model, precision=precision).submit("Hi."))
    assert model.calls_precision == [precision]
    from tilewave import precision

    assert precision.current() == "ieee"  # and only then


@pytest.mark.parametrize("bad", ["fp16", "", None, "IEEE"])
def test_unknown_precision_is_refused_before_any_work(bad):
    with pytest.raises(InputError, match="precision"):
        Session(device="cpu", model=FakeKokoro(), precision=bad)


def test_default_precision_is_tf32x3_and_cpu_audio_does_not_depend_on_it():
    model = PrecisionRecorder()
    default = list(Session(device="cpu", model=model).submit("Hi.", seed=3))
    exact = list(Session(device="cpu", model=model, precision="ieee").submit("Hi.", seed=3))
    assert model.calls_precision == ["tf32x3", "ieee"]
    np.testing.assert_array_equal(default[0].audio, exact[0].audio)
