"""OpenAI's speech API on a real server (uvicorn on loopback) around a model double: every format decoded back
against the engine's own one-shot audio, the fields, the listings, the health check, the metrics, and each bad
request with its status and OpenAI's error body."""
import base64
import io
import json
import threading

import av
import httpx2 as httpx
import numpy as np
import pytest
import soundfile

from tests.engine.fake_model import FakeKokoro
from tilewave.engine import Session
from tilewave.engine.pipeline import join_chunks
from tilewave.errors import WeightsError
from tilewave.server.app import MAX_INPUT_CHARS, create_app, kokoro_speed
from tilewave.server.encoding import EagerJoiner
from tilewave.server.local import serve

TEXT = "Hello there. The quick brown fox jumps over the lazy dog, twice, and then it rests."
SPEECH = "/v1/audio/speech"
# frames of delay and padding a lossy codec adds to a decoded stream: mp3 1152 samples, aac 1024
CODEC_SLACK = {"mp3": 2 * 1152, "aac": 2 * 1024, "opus": 2 * 960}


@pytest.fixture(scope="module")
def session():
    with Session(device="cpu", model=FakeKokoro()) as s:
        yield s


@pytest.fixture(scope="module")
def url(session):
    with serve(create_app(session)) as base:
        yield base


def solo(session, text=TEXT, seed=3, speed=1.0, lang=None):
    """int16 samples of the engine's run of the text, in the chunks a stream makes, joined at once (the
    reference every response is checked against)."""
    audio = join_chunks([c.audio for c in session.stream(text, speed=speed, seed=seed, lang=lang)])
    return np.round(np.clip(audio, -1, 1) * 32767).astype(np.int16)


def say(url, **fields):
    return httpx.post(url + SPEECH, json={"model": "tts-1", "input": TEXT, "voice": "alloy", "seed": 3, **fields},
                      timeout=60)


def decode(data: bytes) -> tuple[np.ndarray, int]:
    with av.open(io.BytesIO(data)) as container:
        frames = list(container.decode(audio=0))
    return np.concatenate([f.to_ndarray().reshape(-1) for f in frames]), frames[0].sample_rate


def test_the_joiner_releases_each_chunk_at_once_and_joins_like_join_chunks():
    rng = np.random.default_rng(0)
    for sizes in ([5000, 3000, 7000], [100, 50, 1000, 30, 240, 241], [1], [239, 4000]):
        audios = [rng.standard_normal(n).astype(np.float32) for n in sizes]
        joiner = EagerJoiner()
        out = [joiner.push(a) for a in audios]
        assert out[0].size == max(0, sizes[0] - 240)  # not held back until the next chunk
        np.testing.assert_array_equal(np.concatenate(out + [joiner.finish()]), join_chunks(audios))


def test_pcm_wav_and_flac_are_exactly_the_engines_samples(url, session):
    expected = solo(session)
    pcm = say(url, response_format="pcm")
    assert pcm.status_code == 200 and pcm.headers["content-type"] == "audio/pcm"
    assert pcm.headers["transfer-encoding"] == "chunked"
    np.testing.assert_array_equal(np.frombuffer(pcm.content, "<i2"), expected)
    for fmt, media in (("wav", "audio/wav"), ("flac", "audio/flac")):
        r = say(url, response_format=fmt)
        assert r.status_code == 200 and r.headers["content-type"] == media
        samples, rate = soundfile.read(io.BytesIO(r.content), dtype="int16")
        assert rate == 24_000
        np.testing.assert_array_equal(samples, expected)


@pytest.mark.parametrize("fmt, media", [("mp3", "audio/mpeg"), ("opus", "audio/opus"), ("aac", "audio/aac")])
def test_lossy_formats_decode_to_the_same_length_and_loudness(url, session, fmt, media):
    expected = solo(session).astype(np.float32) / 32767
    r = say(url, response_format=fmt)
    assert r.status_code == 200 and r.headers["content-type"] == media
    audio, rate = decode(r.content)
    assert np.isfinite(audio).all()
    if fmt == "opus":  # Opus decodes at 48 kHz; the stream says what it was made from
        assert rate == 48_000 and soundfile.info(io.BytesIO(r.content)).samplerate == 24_000
        audio = audio[::2]
    else:
        assert rate == 24_000
    assert expected.size <= audio.size + CODEC_SLACK[fmt] // 2 and audio.size <= expected.size + CODEC_SLACK[fmt]
    rms = lambda x: float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))  # noqa: E731
    assert 0.8 < rms(audio) / rms(expected) < 1.25


def test_mp3_is_the_default_format(url):
    r = httpx.post(url + SPEECH, json={"model": "tts-1", "input": "Hi.", "voice": "alloy"}, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"] == "audio/mpeg" and decode(r.content)[1] == 24_000


def test_openai_speeds_map_onto_kokoros_range(url, session):
    for openai_speed, kokoro in ((4.0, 2.0), (0.25, 0.5), (2.0, 2 ** 0.5), (1, 1.0)):
        assert kokoro_speed(openai_speed) == pytest.approx(kokoro)
        r = say(url, response_format="pcm", speed=openai_speed)
        assert r.status_code == 200
        np.testing.assert_array_equal(np.frombuffer(r.content, "<i2"), solo(session, speed=kokoro_speed(openai_speed)))


def test_voices_by_name_openai_name_and_blend(url):
    for voice in ("af_heart", "alloy", "af_heart+bf_emma", "af_heart(2)+bf_emma(1)", "af_heart:0.7,bf_emma:0.3"):
        r = say(url, response_format="pcm", voice=voice)
        assert r.status_code == 200 and len(r.content) > 0, voice
    assert say(url, response_format="pcm").content != b""  # no voice: the language's default


def test_a_stock_voice_or_lang_code_names_the_texts_language(url, session):
    # the fake model says each token as a tone: the samples show which phonemizer read the text
    spanish = "Hola, ¿cómo estás? Son las tres de la tarde."
    as_spanish, as_english = solo(session, spanish, lang="es"), solo(session, spanish)
    assert as_spanish.size != as_english.size or not np.array_equal(as_spanish, as_english)
    for fields, expected in (({"voice": "ef_dora"}, as_spanish), ({"voice": "ef_dora+em_alex"}, as_spanish),
                             ({"voice": "af_heart", "lang_code": "es"}, as_spanish),
                             ({"voice": "alloy", "lang_code": "e"}, as_spanish),
                             ({"voice": "alloy"}, as_english),  # OpenAI's voices speak any language: the server's
                             ({"voice": "ef_dora+af_heart"}, as_english)):  # a blend across languages: the server's
        r = say(url, input=spanish, response_format="pcm", **fields)
        assert r.status_code == 200, r.text
        np.testing.assert_array_equal(np.frombuffer(r.content, "<i2"), expected, err_msg=str(fields))


def test_ssml_input_is_the_engines_markup_and_bad_ssml_is_a_400(url, session):
    ssml = '<speak>Hello <break time="700ms"/> there, <say-as interpret-as="characters">API</say-as>.</speak>'
    r = say(url, input=ssml, response_format="pcm")
    assert r.status_code == 200, r.text
    np.testing.assert_array_equal(np.frombuffer(r.content, "<i2"), solo(session, "Hello [pause:0.7s] there, A P I."))
    message = openai_error(say(url, input="<speak>Hello <break></speak>"), 400, "input", "invalid_input")
    assert "not well-formed" in message
    dialogue = '<speak>Hi. <voice name="bm_george"><prosody rate="slow">Who is there?</prosody></voice></speak>'
    assert say(url, input=dialogue, response_format="pcm").status_code == 200
    for voice in ("/etc/passwd", "../voice.npz"):  # a voice a text names is never a file
        message = openai_error(say(url, input=f'<speak>Hi. <voice name="{voice}">There.</voice></speak>'), 400,
                               "input", "invalid_input")
        assert "unknown voice" in message and "exist" not in message


def test_kokoro_fastapis_volume_and_normalization_options_are_taken(url, session):
    from tilewave.engine.session import FIRST_CHUNK_PHONEMES

    def pcm(r):
        assert r.status_code == 200, r.text
        return np.frombuffer(r.content, "<i2").astype(np.int32)

    audio = join_chunks([c.audio for c in session.stream(TEXT, seed=3)])
    for volume in (0.5, 3.0):  # louder: clipped at full scale, as the int16 samples are
        expected = np.round(np.clip(audio * volume, -1, 1) * 32767).astype(np.int32)
        assert np.abs(pcm(say(url, response_format="pcm", volume_multiplier=volume)) - expected).max() <= 1
    money = "It costs $3.99 at 9:45 pm."
    as_written = join_chunks([c.audio for c in session.submit(money, seed=3, first_limit=FIRST_CHUNK_PHONEMES,
                                                              normalize=False)])
    as_written = np.round(np.clip(as_written, -1, 1) * 32767).astype(np.int32)
    got = pcm(say(url, input=money, response_format="pcm", normalization_options={"normalize": False}))
    assert np.array_equal(got, as_written) and not np.array_equal(got, solo(session, money).astype(np.int32))


def test_sse_sends_base64_deltas_of_the_format_then_done(url):
    pcm = say(url, response_format="pcm").content
    r = say(url, response_format="pcm", stream_format="sse")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(block[len("data: "):]) for block in r.text.strip().split("\n\n")]
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    assert events[-1]["type"] == "speech.audio.done" and events[-1]["usage"]["output_tokens"] > 0
    assert b"".join(base64.b64decode(e["audio"]) for e in events[:-1]) == pcm


def test_listings_and_health(url):
    assert httpx.get(url + "/health").json() == {"status": "ok"}
    models = httpx.get(url + "/v1/models").json()
    assert models["object"] == "list" and [m["id"] for m in models["data"]] == ["kokoro", "tts-1", "tts-1-hd"]
    assert httpx.get(url + "/v1/audio/models").json()["models"][1] == {"id": "tts-1", "name": "tts-1"}
    voices = httpx.get(url + "/v1/audio/voices").json()["voices"]
    ids = [v["id"] for v in voices]
    assert {"af_heart", "bf_emma", "alloy", "nova"} <= set(ids) and all(v["name"] for v in voices)
    assert len(ids) == len(set(ids))


def test_metrics_count_requests_first_audio_batches_and_queue(url):
    assert say(url, response_format="pcm").status_code == 200
    text = httpx.get(url + "/metrics").text
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line and not line.startswith("#")}
    assert samples['tilewave_requests_total{endpoint="/v1/audio/speech",status="200"}'] >= 1
    for name in ("tilewave_time_to_first_audio_seconds_count", "tilewave_real_time_factor_count",
                 "tilewave_batch_size_count"):
        assert samples[name] >= 1, name
    assert samples["tilewave_queue_depth"] == 0


BAD = [
    ({"voice": "alloy"}, 400, "input", "missing_required_parameter"),
    ({"input": ""}, 400, "input", "empty_input"),
    ({"input": "   "}, 400, "input", "empty_input"),
    ({"input": "x" * (MAX_INPUT_CHARS + 1)}, 400, "input", "string_above_max_length"),
    ({"input": 7}, 400, "input", "invalid_value"),
    ({"input": "Hi.", "voice": "nobody"}, 400, "voice", "invalid_voice"),
    ({"input": "Hi.", "voice": "af_heart+nobody"}, 400, "voice", "invalid_voice"),
    ({"input": "Hi.", "voice": "/etc/passwd"}, 400, "voice", "invalid_voice"),
    ({"input": "Hi.", "voice": "../x.npz"}, 400, "voice", "invalid_voice"),
    ({"input": "Hi.", "voice": "af_heart+/etc/passwd"}, 400, "voice", "invalid_voice"),
    ({"input": "Hi.", "speed": 4.5}, 400, "speed", "invalid_value"),
    ({"input": "Hi.", "speed": 0.2}, 400, "speed", "invalid_value"),
    ({"input": "Hi.", "speed": "fast"}, 400, "speed", "invalid_value"),
    ({"input": "Hi.", "response_format": "ogg"}, 400, "response_format", "invalid_value"),
    ({"input": "Hi.", "stream_format": "chunks"}, 400, "stream_format", "invalid_value"),
    ({"input": "Hi.", "model": "gpt-4o-mini-tts"}, 404, "model", "model_not_found"),
    ({"input": "Hi.", "lang_code": "xx"}, 400, "lang_code", "invalid_value"),
    ({"input": "Hi.", "lang_code": 3}, 400, "lang_code", "invalid_value"),
    ({"input": "Hi.", "volume_multiplier": 11}, 400, "volume_multiplier", "invalid_value"),
    ({"input": "Hi.", "volume_multiplier": -1}, 400, "volume_multiplier", "invalid_value"),
    ({"input": "Hi.", "normalization_options": {"normalize": "no"}}, 400, "normalization_options.normalize",
     "invalid_value"),
]


def openai_error(r, status, param=None, code=None) -> str:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["type"] == ("invalid_request_error" if status < 500 else "server_error")
    assert error["param"] == param and error["code"] == code, error
    return error["message"]


@pytest.mark.parametrize("body, status, param, code", BAD)
def test_bad_fields_get_openais_error(url, body, status, param, code):
    openai_error(httpx.post(url + SPEECH, json=body), status, param, code)


def test_a_path_as_voice_says_nothing_about_the_file(url, tmp_path):
    there = tmp_path / "voice.npz"
    np.savez(there, v=np.ones((510, 1, 256), np.float32))
    messages = [openai_error(httpx.post(url + SPEECH, json={"input": "Hi.", "voice": v}), 400, "voice",
                             "invalid_voice").replace(v, "<v>")
                for v in (str(there), str(tmp_path / "none.npz"), "/etc/passwd", "/etc/none")]
    assert len(set(messages)) == 1 and "exist" not in messages[0] and "root" not in messages[0]


def test_bad_bodies_get_openais_error(url):
    post = lambda content, kind="application/json": httpx.post(  # noqa: E731
        url + SPEECH, content=content, headers={"content-type": kind} if kind else {})
    openai_error(post(b'{"input": "Hi.",'), 400, code="invalid_json")
    openai_error(post(b"\xff\xfe"), 400, code="invalid_json")
    openai_error(post(b'["Hi."]'), 400, code="invalid_json")
    openai_error(post(b'{"input": "Hi."}', "text/plain"), 415, code="unsupported_media_type")
    openai_error(post(b'{"input": "Hi."}', None), 415, code="unsupported_media_type")
    big = json.dumps({"input": "Hi.", "pad": "x" * 70_000}).encode()
    openai_error(post(big), 413, code="request_too_large")

    def chunked():  # no Content-Length: the limit holds while reading
        yield b'{"input": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'"}'
    openai_error(httpx.post(url + SPEECH, content=chunked(), headers={"content-type": "application/json"}), 413,
                 code="request_too_large")
    openai_error(httpx.get(url + "/v1/nothing"), 404, code="not_found")
    openai_error(httpx.get(url + SPEECH), 405, code="method_not_allowed")


def test_an_api_key_is_required_when_set(session):
    with serve(create_app(session, api_key="s3cret-key")) as url:
        body = {"input": "Hi.", "response_format": "pcm"}
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "s3cret-key"},
                        {"authorization": "Basic s3cret-key"}):
            for r in (httpx.post(url + SPEECH, json=body, headers=headers),
                      httpx.get(url + "/v1/models", headers=headers), httpx.get(url + "/v1/audio/voices", headers=headers)):
                openai_error(r, 401, code="invalid_api_key")
        ok = {"authorization": "Bearer s3cret-key"}
        assert httpx.post(url + SPEECH, json=body, headers=ok).status_code == 200
        assert httpx.get(url + "/v1/models", headers=ok).status_code == 200
        assert httpx.get(url + "/health").status_code == 200  # probes need no key


class SlowSession(Session):
    def __init__(self, fail=None, **kw):
        super().__init__(**kw)
        self.go, self.fail = threading.Event(), fail

    def load(self):
        assert self.go.wait(30)
        if self.fail:
            raise self.fail
        return super().load()


def test_health_is_ready_only_once_the_model_is_loaded():
    session = SlowSession(device="cpu", model=FakeKokoro())
    with serve(create_app(session), ready=False) as url:
        assert httpx.get(url + "/health").json() == {"status": "loading"}
        r = httpx.post(url + SPEECH, json={"input": "Hi."})
        openai_error(r, 503, code="not_ready")
        assert r.headers["retry-after"] == "1"
        session.go.set()
        for _ in range(500):  # bounded: 10 s
            if httpx.get(url + "/health").status_code == 200:
                break
            threading.Event().wait(0.02)
        assert httpx.get(url + "/health").json() == {"status": "ok"}
        assert httpx.post(url + SPEECH, json={"input": "Hi."}).status_code == 200


def test_a_model_that_fails_to_load_is_reported():
    failed = []
    session = SlowSession(fail=WeightsError("the weights are broken"), device="cpu", model=FakeKokoro())
    session.go.set()
    with serve(create_app(session, on_load_error=failed.append), ready=False) as url:
        for _ in range(500):
            if failed:
                break
            threading.Event().wait(0.01)
        assert [str(e) for e in failed] == ["the weights are broken"]
        assert httpx.get(url + "/health").json() == {"status": "failed", "error": "the weights are broken"}
        assert "the weights are broken" in openai_error(httpx.post(url + SPEECH, json={"input": "Hi."}), 503,
                                                        code="not_ready")


def test_captioned_speech_gives_the_audio_and_its_words_in_each_timestamp_format():
    with Session(device="cpu", model=FakeKokoro()) as session, serve(create_app(session)) as url:
        check_captioned(session, url)


def check_captioned(session, url):
    from tilewave.engine.timestamps import word_timestamps

    chunks = list(session.submit(TEXT, session.voice, 1.0, 3))  # what the server makes: one request, no early cut
    words = [(w.word, round(w.start, 6), round(w.end, 6)) for w in word_timestamps(chunks)]
    audio = np.round(np.clip(join_chunks([c.audio for c in chunks]), -1, 1) * 32767).astype(np.int16)
    for fmt in ("json", "srt", "vtt"):
        r = httpx.post(url + SPEECH + "/captioned", timeout=60, json={"model": "tts-1", "input": TEXT, "seed": 3,
                                                                      "response_format": "wav", "timestamps_format": fmt})
        assert r.status_code == 200, r.text
        body = r.json()
        got, rate = soundfile.read(io.BytesIO(base64.b64decode(body["audio"])), dtype="int16")
        assert rate == 24_000 and np.array_equal(got, audio)
        assert [(w["word"], round(w["start"], 6), round(w["end"], 6)) for w in body["words"]] == words
        assert [w[0] for w in words] == TEXT.split()
        if fmt == "json":
            assert "captions" not in body
        else:
            assert body["captions"].startswith("WEBVTT" if fmt == "vtt" else "1\n") and "quick" in body["captions"]
    bad = httpx.post(url + SPEECH + "/captioned", json={"model": "tts-1", "input": TEXT, "timestamps_format": "ass"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "timestamps_format"


class WarmingSession(Session):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.go, self.warmed = threading.Event(), []

    def warm_up_serving(self, batches=(1, 2)):
        assert self.go.wait(30)
        self.warmed.append(batches)
        super().warm_up_serving(batches)


def test_warm_up_runs_before_health_says_ready_and_its_batches_stay_out_of_the_metrics():
    session = WarmingSession(device="cpu", model=FakeKokoro())
    with serve(create_app(session, warm_up=True), ready=False) as url:
        assert httpx.get(url + "/health").json() == {"status": "loading"}
        session.go.set()
        for _ in range(500):  # bounded: 10 s
            if httpx.get(url + "/health").status_code == 200:
                break
            threading.Event().wait(0.02)
        assert session.warmed == [(1, 2)] and len(session.batches()) >= 2
        assert 'tilewave_batch_size_count 0.0' in httpx.get(url + "/metrics").text
        assert httpx.post(url + SPEECH, json={"input": "Hi.", "response_format": "pcm"}).status_code == 200
        assert 'tilewave_batch_size_count 1.0' in httpx.get(url + "/metrics").text


def test_a_cpu_server_does_not_warm_up_by_default():
    session = WarmingSession(device="cpu", model=FakeKokoro())
    session.go.set()
    with serve(create_app(session)) as url:
        assert httpx.get(url + "/health").status_code == 200 and session.warmed == []
