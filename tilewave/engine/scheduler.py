"""Many requests, one model: a bounded queue of requests, their chunks grouped into batches by length, one
worker thread running each batch through `model.forward_batch`, every request's chunks handed back in order.

    scheduler = Scheduler(model, frame_budget=8_000)
    request = scheduler.submit([Job(ids, ref_s, speed, text, phonemes), ...], seed=7)
    for chunk in request: ...           # Chunks in order, each as soon as it is made
    request.cancel()                    # drops the chunks not yet run
    scheduler.close()

A batch takes chunks of one length bucket (phoneme counts within a factor of two) while batch size x the
longest estimated frame count stays within the frame budget; below `fill` padded frames it takes other
buckets' chunks too. A request's chunks enter batches strictly in
their order (its next chunk, then the one after it in the same batch or a later one), so a seeded request
draws from its generator in the solo order: its audio is that of a solo run. A request that fails (its
model call raises, or its audio is not finite) fails alone: the batch is run again item by item from the
generators' saved states, so the others still get their solo audio.
"""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import math
import queue
import sys
import threading
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import torch

from tilewave.engine.pipeline import SAMPLE_RATE, Chunk
from tilewave.errors import InputError, TilewaveError

log = logging.getLogger("tilewave.engine")

# Frames (600 samples, 25 ms) of a chunk, for sizing batches before the durations are known: per token at speed
# 1.0, plus the pauses at its ends: above what Kokoro makes of short and long inputs (about 2.4-6 frames a
# phoneme with the pauses).
FRAMES_PER_TOKEN = 3.0
PAUSE_FRAMES = 30
DEFAULT_MAX_REQUESTS = 64
DEFAULT_MAX_BATCH = 64
# Padded frames per batch when no memory budget is given: ~100 s of speech, two full 510-phoneme chunks at once
# (~2.5 GB at session.BYTES_PER_FRAME).
DEFAULT_FRAME_BUDGET = 4_096
# The interpreter's thread switch interval once a scheduler runs (seconds; None leaves it alone). PyTorch releases
# the GIL inside every op, so the worker takes it back after each launch; while another thread runs Python (HTTP
# handlers, audio encoding, the caller's own threads) it waits until the holder is made to drop it: up to the
# interval, 5 ms by default, per op. Beside a thread spinning in Python a graphed single took ~80x its time alone at
# 5 ms and ~6x at 0.5 ms (benchmarks/diag/gil.py); 0.1 ms took a fifth of a phonemizing neighbour's rate. Shorter
# only: a process that set a shorter one keeps it.
SWITCH_INTERVAL_S: float | None = 0.0005


class QueueFull(InputError):
    """The scheduler holds as many requests as it takes; wait (submit(block=True)) or refuse the caller."""


class Cancelled(TilewaveError):
    """The request was cancelled (or its scheduler closed) before all its chunks were made."""


@dataclass
class Job:
    """One chunk of a request, ready for the model."""
    ids: torch.Tensor    # LongTensor [N + 2] (wrapped with 0s), on the model's device
    ref_s: torch.Tensor  # [1, 256] the voice pack's style for N phonemes
    speed: float
    text: str
    phonemes: str        # '' for a pause alone: made as silence, without the model
    words: tuple = ()    # text.chunking.Word spans, for word timestamps
    pause: float = 0.0   # seconds of silence after the speech ([pause:...])

    @property
    def frames(self) -> int:
        """Estimated frames, for the batch budget (the real count comes from the duration predictor)."""
        return math.ceil((self.ids.numel() * FRAMES_PER_TOKEN + PAUSE_FRAMES) / self.speed)

    @property
    def bucket(self) -> int:
        return max(0, (len(self.phonemes) - 1).bit_length() - 5)  # 1-32, 33-64, 65-128, 129-256, 257-510


_DONE = object()


class Request(Iterator[Chunk]):
    """A submitted request: iterate it (or `async for`) for its Chunks in order; len() is how many (so far, while
    `complete` is False: a stream queues its first chunk before the rest of its text is phonemized)."""

    def __init__(self, scheduler: "Scheduler", jobs: list[Job], generator: torch.Generator | None,
                 complete: bool = True) -> None:
        self._scheduler, self.jobs, self.generator = scheduler, jobs, generator
        self.complete = complete  # every job is known (else Scheduler.extend adds more; guarded by the lock)
        self._next = 0          # index of the next job to enter a batch (guarded by the scheduler's lock)
        self._made = 0          # chunks handed out
        self.error: BaseException | None = None  # what ends the request after its last chunk (Scheduler.extend)
        self._out: queue.Queue = queue.Queue()
        self.finished = False   # all jobs run, or failed, or cancelled (guarded by the scheduler's lock)
        self._when: tuple[int, Callable[[], None]] | None = None  # Scheduler.when_made

    def __len__(self) -> int:
        return len(self.jobs)

    def __next__(self) -> Chunk:
        item = self._out.get()
        if item is _DONE:
            self._out.put(_DONE)  # a second next() also stops
            raise StopIteration
        if isinstance(item, BaseException):
            self._out.put(item)
            raise item
        return item

    def __aiter__(self):
        return self._async_chunks()

    async def _async_chunks(self):
        try:
            while True:
                item = await asyncio.to_thread(self._out.get)
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.cancel()  # a client gone mid-stream frees its place (no-op once finished)

    def cancel(self) -> None:
        """Drop the chunks not yet run; an iterator over this request then stops with Cancelled."""
        self._scheduler._finish(self, Cancelled("the request was cancelled"))


@dataclass
class BatchStats:
    size: int
    padded_frames: int      # batch size x the longest estimated frame count
    frames: int             # frames the model made (sum of durations)
    peak_bytes: int | None  # the session's peak memory so far, above what it held at start (None: not measurable)


def _shorten_switch_interval() -> None:
    """The process's switch interval at most SWITCH_INTERVAL_S (see there): the worker's ops wait that long for
    the GIL at most when other threads run Python."""
    if SWITCH_INTERVAL_S is not None and sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)


class Scheduler:
    """Requests in, batches through one worker thread, chunks out. `context()` is entered around every
    batch on the worker thread (the session's precision scope and inference mode live in thread-local or
    context state, so they must be set where the model runs)."""

    def __init__(self, model, device: str | torch.device = "cpu", *, frame_budget: int = DEFAULT_FRAME_BUDGET,
                 max_batch: int = DEFAULT_MAX_BATCH, max_requests: int = DEFAULT_MAX_REQUESTS,
                 context: Callable = contextlib.nullcontext, profile=None, dtype: torch.dtype = torch.float32,
                 fill: int = 1) -> None:
        self.device = torch.device(device)
        self.model, self.frame_budget, self.max_batch, self.max_requests = model, frame_budget, max_batch, max_requests
        self.fill = fill  # padded frames below which a batch takes other length buckets too (a GPU's small batches
        # are launch-bound)
        self._context, self.profile, self.dtype = context, profile, dtype
        self._active: deque[Request] = deque()  # admitted and not finished, in order of arrival
        self._cond = threading.Condition()
        self._closed = False
        self._peak: PeakMemory | None = None  # made by the worker's first batch, after the model is loaded
        self.batches: list[BatchStats] = []
        _shorten_switch_interval()
        self._worker = threading.Thread(target=self._work, name="tilewave-scheduler", daemon=True)
        self._worker.start()
        atexit.register(_finish_at_exit, weakref.ref(self))

    # -- callers ------------------------------------------------------------------------------------
    def submit(self, jobs: list[Job], seed: int | None = None, block: bool = False,
               timeout: float | None = None, complete: bool = True) -> Request:
        """Queue a request's jobs (already checked). A full queue raises QueueFull at once, or, with
        block=True, after waiting up to `timeout` seconds (None: until there is room). complete=False: more
        jobs follow through extend(), the last call with complete=True."""
        return self.submit_many([(jobs, seed)], block, timeout, complete)[0]

    def extend(self, request: Request, jobs: list[Job], complete: bool = True,
               error: BaseException | None = None) -> None:
        """Add jobs to a request submitted with complete=False (a no-op once it is finished, e.g. cancelled);
        `error`: the rest could not be made, so the request ends with it after the chunks already queued."""
        with self._cond:
            if request.finished:
                return
            request.jobs.extend(jobs)
            request.complete = complete or error is not None
            request.error = error  # handed out after the chunks already queued
            if request.complete and request._made == len(request.jobs):
                self._finish_locked(request, _DONE if error is None else error)
            self._cond.notify_all()

    def when_made(self, request: Request, count: int, callback: Callable[[], None]) -> None:
        """Call `callback` (on the worker thread, outside the lock) once `count` of the request's chunks are
        made; never if it finishes first (cancelled or failed). At once if they are already made. One per request
        (a later call replaces an earlier one not yet due)."""
        with self._cond:
            if request.finished:
                return
            if request._made < count:
                request._when = (count, callback)
                return
        callback()

    def submit_many(self, requests: list[tuple[list[Job], int | None]], block: bool = False,
                    timeout: float | None = None, complete: bool = True) -> list[Request]:
        """Queue several requests (jobs, seed) as submit does, in one hold of the lock while there is room, so
        that the worker's next batch can take all of them (one at a time, it could start on the first alone)."""
        made = []
        for jobs, seed in requests:
            if not jobs:
                raise InputError("a request needs at least one chunk to say")
            made.append(Request(self, list(jobs), None if seed is None else torch.Generator(self.device).manual_seed(seed),
                                complete))
        with self._cond:
            try:
                for request in made:
                    if block:
                        self._cond.wait_for(lambda: self._closed or len(self._active) < self.max_requests, timeout)
                    if self._closed:
                        raise Cancelled("the scheduler is closed; start a new session")
                    if len(self._active) >= self.max_requests:
                        then = f"no room came within {timeout} s" if block else "submit with block=True to wait for room"
                        raise QueueFull(f"the engine already holds {self.max_requests} requests (max_requests); "
                                        f"{then}, or try again later")
                    self._active.append(request)
            except (Cancelled, QueueFull) as exc:  # all or none: the ones already queued leave with the error
                for request in made:
                    self._finish_locked(request, Cancelled(f"not queued: {exc}"))
                raise
            self._cond.notify_all()
        return made

    def pending(self) -> int:
        """Requests admitted and not yet finished."""
        with self._cond:
            return len(self._active)

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop: requests not finished end with Cancelled; waits up to `timeout` s (None: as long as it takes)
        for the running batch. A batch still running at interpreter exit is waited for then (see
        _finish_at_exit)."""
        with self._cond:
            self._closed = True
            for request in list(self._active):
                self._finish_locked(request, Cancelled("the session was closed before the request finished"))
            self._cond.notify_all()
        if threading.current_thread() is not self._worker:
            self._worker.join(timeout)

    # -- the worker ---------------------------------------------------------------------------------
    def _finish(self, request: Request, outcome) -> None:
        with self._cond:
            self._finish_locked(request, outcome)

    def _finish_locked(self, request: Request, outcome) -> None:
        if request.finished:
            return
        request.finished = True
        with contextlib.suppress(ValueError):
            self._active.remove(request)
        request._out.put(outcome)
        self._cond.notify_all()

    def _take_batch(self) -> list[tuple[Request, int]]:
        """The oldest waiting chunk and, from every request in order of arrival, the following chunks of its
        length bucket that fit the frame budget (each request's taken in its own order, from its next one); a
        batch of fewer than `fill` padded frames then takes the following chunks of any length that still fit."""
        ready = [r for r in self._active if r._next < len(r.jobs)]
        if not ready:
            return []
        bucket = ready[0].jobs[ready[0]._next].bucket
        batch: list[tuple[Request, int]] = []
        longest = 0
        for same_bucket in (True, False):
            for request in ready:
                i = request._next
                while i < len(request.jobs) and len(batch) < self.max_batch and (
                        not same_bucket or request.jobs[i].bucket == bucket):
                    frames = max(longest, request.jobs[i].frames)
                    if batch and (len(batch) + 1) * frames > self.frame_budget:
                        break
                    batch.append((request, i))
                    longest, i = frames, i + 1
                request._next = i
            if len(batch) * longest >= self.fill:
                break
        return batch

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or any(r._next < len(r.jobs) for r in self._active))
                if self._closed:
                    return
                batch = self._take_batch()
            try:
                results = self._run(batch)
            except BaseException as exc:  # never leave a caller waiting on a dead worker
                results = [_result(request.jobs[i], exc) for request, i in batch]
            due = []
            with self._cond:
                for (request, i), result in zip(batch, results):
                    if request.finished:
                        continue  # cancelled (or failed) meanwhile: its chunk is dropped
                    if isinstance(result, BaseException):
                        self._finish_locked(request, result)
                        continue
                    request._out.put(result)
                    request._made += 1
                    if request._when is not None and request._made >= request._when[0]:
                        due.append(request._when[1])
                        request._when = None
                    if request.complete and request._made == len(request.jobs):
                        self._finish_locked(request, request.error or _DONE)
            for callback in due:
                try:
                    callback()
                except Exception:  # noqa: BLE001 - the worker must live on for every other request
                    log.exception("a request's when_made callback failed")

    def _run(self, batch: list[tuple[Request, int]]) -> list:
        generators = {id(r.generator): r.generator for r, _ in batch if r.generator is not None}
        saved = {k: g.get_state() for k, g in generators.items()}
        memory = self._memory()
        with self._context():
            try:
                outputs = self._forward(batch)
            except Exception as exc:
                outputs = [exc] if len(batch) == 1 else self._one_by_one(batch, exc, generators, saved)
        results = [_result(request.jobs[i], out) for (request, i), out in zip(batch, outputs)]
        longest = max(request.jobs[i].frames for request, i in batch)
        made = sum(int(r.durations.sum()) for r in results if isinstance(r, Chunk))
        self.batches.append(BatchStats(len(batch), len(batch) * longest, made, memory.bytes()))
        return results

    def _one_by_one(self, batch, exc, generators, saved) -> list:
        """A failed batch again, item by item from the generators' states before it: each failure is its own."""
        log.warning("a batch of %d failed (%s); running its items one by one", len(batch), exc)
        for k, g in generators.items():
            g.set_state(saved[k])
        outputs, failed = [], set()
        for request, i in batch:
            if id(request) in failed:
                outputs.append(None)
                continue
            try:
                outputs += self._forward([(request, i)])
            except Exception as item_exc:
                failed.add(id(request))
                outputs.append(item_exc)
        return outputs

    def _memory(self) -> PeakMemory:
        if self._peak is None:
            self._peak = PeakMemory(self.device)
        return self._peak

    def peak_bytes(self) -> int | None:
        """Peak memory so far above what was held before the first batch (see PeakMemory)."""
        return None if self._peak is None else self._peak.bytes()

    def _forward(self, batch: list[tuple[Request, int]]) -> list:
        """The model's outputs for the batch's jobs; a pause alone gets None in its place (no model call)."""
        speaking = [(request, i) for request, i in batch if request.jobs[i].phonemes]
        jobs = [request.jobs[i] for request, i in speaking]
        outputs = iter(self.model.forward_batch([job.ids for job in jobs], torch.cat([job.ref_s for job in jobs]),
                                                [job.speed for job in jobs], [r.generator for r, _ in speaking],
                                                profile=self.profile, dtype=self.dtype) if jobs else [])
        return [next(outputs) if request.jobs[i].phonemes else None for request, i in batch]


def _result(job: Job, out):
    """The Chunk made for `job`, or the error to end its request with (None: its request already failed)."""
    silence = np.zeros(round(job.pause * SAMPLE_RATE), dtype=np.float32)
    if not job.phonemes and not isinstance(out, BaseException):
        return Chunk(job.text, "", torch.zeros(0, dtype=torch.long), silence, (), job.pause)
    interrupt = isinstance(out, BaseException) and not isinstance(out, Exception)
    if out is None or interrupt or isinstance(out, TilewaveError):
        return out  # nothing, an interrupt, or a message already for the user: passed on as it is
    if isinstance(out, Exception):
        error = TilewaveError(f"the model failed on {job.text or job.phonemes!r:.80} on {job.ids.device}: "
                              f"{type(out).__name__}: {out}")
        error.__cause__ = out
        return error
    audio = out.audio.detach().float().cpu().numpy().reshape(-1)
    bad = int(np.count_nonzero(~np.isfinite(audio)))
    if bad or audio.size == 0:
        return TilewaveError(f"the model gave {'no audio' if not audio.size else f'{bad} NaN/infinite samples'} for "
                             f"{job.text or job.phonemes!r} on {job.ids.device}; the weights or the device's kernels "
                             "are faulty: try device='cpu' and check the weights file")
    if silence.size:
        audio = np.concatenate([audio, silence])
    return Chunk(job.text, job.phonemes, out.durations.detach().cpu(), audio, job.words, job.pause)


class PeakMemory:
    """Peak memory since it was made, above what was held then (the weights are already loaded when the
    session makes it): the CUDA allocator's peak on a GPU; on a CPU the process's peak resident set (Linux
    VmHWM, reset through /proc/self/clear_refs), None where that cannot be read."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        if self.cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            self._base = torch.cuda.memory_allocated(device)
        else:
            self._base = _reset_rss_peak()
        self.device = device

    def bytes(self) -> int | None:
        if self.cuda:
            return torch.cuda.max_memory_allocated(self.device) - self._base
        peak = _status_bytes("VmHWM")
        return None if peak is None or self._base is None else max(0, peak - self._base)


def _status_bytes(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_rss_peak() -> int | None:
    """The resident set now, after setting the peak to it; None where the kernel does not allow that."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_bytes("VmRSS")


def _finish_at_exit(ref: weakref.ref) -> None:
    """At interpreter exit, let a batch still running in the worker end first: a daemon thread inside a torch op
    while the interpreter tears down aborts the whole process ("terminate called without an active exception",
    exit status 134; seen after a cancelled stream's session was closed while its next chunk was being made)."""
    scheduler = ref()
    if scheduler is not None:
        scheduler.close(timeout=None)

