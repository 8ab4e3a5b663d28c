"""Items -> audio through engine sessions: one session per language, all on one loaded model, every item a
request of the session's scheduler so that the chunks of a window of items share batches. A bad item (its
text, voice, speed, seed or language refused, or its synthesis failing) becomes an error result; the others
go on. Used in one process (local.py) and inside each Ray actor (ray_data.py)."""
from __future__ import annotations

from collections import deque
from typing import Iterable, Iterator

import numpy as np

from tilewave.distributed.jobs import Item, Job, Result, item_key
from tilewave.engine import SAMPLE_RATE, Session, join_chunks
from tilewave.engine.process import configure_process
from tilewave.engine.timestamps import word_timestamps
from tilewave.errors import TilewaveError, WeightsError

# Items submitted ahead of the one being written: enough to fill the scheduler's batches with chunks of many
# items, well under its DEFAULT_MAX_REQUESTS so that a submit never waits on the caller's own backlog.
WINDOW = 32


class Synthesizer:
    """Sessions (one per language, made on first use) over one model, loaded by the first item that passes
    its checks (or by `load()`); a weights error stops the run instead of failing each item."""

    def __init__(self, device=None, precision=None, weights=None, memory_budget=None, lang: str = "en-us",
                 model_id: str = "", dtype: str = "float32") -> None:
        configure_process(device, memory_budget)  # the batch job's process (this one, or a Ray actor's)
        self._options = {"device": device, "weights": weights, "memory_budget": memory_budget, "dtype": dtype}
        if precision is not None:
            self._options["precision"] = precision
        self.lang, self.model_id = lang, model_id
        self._sessions: dict[str, Session] = {}

    def session(self, lang: str | None) -> Session:
        lang = lang or self.lang
        if lang not in self._sessions:
            model = next(iter(self._sessions.values())).model if self._sessions else None
            self._sessions[lang] = Session(lang=lang, model=model, **self._options)
        return self._sessions[lang]

    def load(self) -> "Synthesizer":
        self.session(self.lang).load()
        return self

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()

    def run(self, items: Iterable[Item], job: Job | None = None,
            window: int = WINDOW) -> Iterator[tuple[Result, np.ndarray | None]]:
        """(result, audio) per item, in order; with a job each good item's file is written before its result
        is yielded (audio then None), without one the audio comes back."""
        pending: deque = deque()
        for item in items:
            try:
                request = self.session(item.lang).submit(item.text, voice=item.voice, speed=item.speed,
                                                         seed=item.seed)
            except WeightsError:
                raise  # the run's weights, not this item: nothing can be said
            except TilewaveError as exc:
                request = exc
            pending.append((item, request))
            if len(pending) >= window:
                yield self._finish(*pending.popleft(), job)
        while pending:
            yield self._finish(*pending.popleft(), job)

    def _finish(self, item: Item, request, job: Job | None) -> tuple[Result, np.ndarray | None]:
        key = job.key(item) if job is not None else item_key(item, self.model_id, "array")
        if isinstance(request, Exception):
            return Result(item.id, key, "error", error=str(request)), None
        try:
            chunks = list(request)
        except Exception as exc:  # a model failure of this item alone (the scheduler fails it by itself)
            return Result(item.id, key, "error", error=f"{type(exc).__name__}: {exc}"), None
        audio = join_chunks([c.audio for c in chunks])
        words = [{"word": w.word, "start": round(w.start, 4), "end": round(w.end, 4)} for w in word_timestamps(chunks)]
        result = Result(item.id, key, "ok", seconds=round(audio.size / SAMPLE_RATE, 4),
                        phonemes=" ".join(c.phonemes for c in chunks if c.phonemes), words=words)
        if job is None:
            return result, audio
        result.file = job.write(item, audio, SAMPLE_RATE)
        return result, None
