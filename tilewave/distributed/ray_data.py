"""Batch synthesis on Ray Data: a callable class for `map_batches`, one engine (model loaded once) per actor.

In a Ray Data pipeline of your own (columns `text`, optional `id`, `voice`, `speed`, `seed`, `lang`):

    import ray
    from tilewave.distributed import KokoroSynthesizer

    ds = ray.data.read_json("book.jsonl")
    out = ds.map_batches(KokoroSynthesizer, batch_size=32, num_gpus=1,        # num_gpus=0, num_cpus=1 on CPUs
                         compute=ray.data.ActorPoolStrategy(size=2))
    # adds `status`, `seconds`, `phonemes`, `error` and `audio` (float32 at 24 kHz; empty for a failed item),
    # or, with fn_constructor_kwargs={"output_dir": "out/", "fmt": "flac"}, writes out/<id>.flac instead and
    # adds `file` (then `id` is needed)

`run_ray` is `tilewave batch --ray`: the manifest's items not yet done go through such actors, each writing its
files (so on several nodes the output folder must be one they all see: NFS, a mounted bucket); the driver logs
their results as they come, so a rerun skips what was written. The driver reads the manifest (and checks it
whole) and hands Ray Data the items to make.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np

from tilewave.distributed.jobs import Item, Job, Result, model_identity
from tilewave.distributed.local import Options, Progress, Summary, finish, plan
from tilewave.distributed.synth import Synthesizer
from tilewave.engine.pipeline import check_seed, check_speed
from tilewave.errors import InputError, TilewaveError

COLUMNS = ("id", "text", "voice", "speed", "seed", "lang")


def _value(v):
    """A batch cell as a plain Python value; Ray Data's nulls (None, or NaN in a float column) as None."""
    if isinstance(v, np.generic):
        v = v.item()
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _item(batch: dict, i: int) -> Item:
    cell = {c: _value(batch[c][i]) if c in batch else None for c in COLUMNS}
    seed = cell["seed"]
    if isinstance(seed, float) and seed.is_integer():
        seed = int(seed)  # an integer column with nulls arrives as floats
    # without an id column (audio back, no files) a row is named by its place in the batch
    return Item(str(cell["id"]) if cell["id"] is not None else str(i), cell["text"], cell["voice"], cell["speed"],
                seed, cell["lang"])


class KokoroSynthesizer:
    """A `map_batches` callable: text batches in, speech out; one engine session per actor (per language),
    the model loaded once in the constructor. Items are said with the constructor's defaults where a row
    gives none; a bad row gets status "error" and its message, never a failed task."""

    def __init__(self, output_dir: str | None = None, fmt: str = "wav", voice: str | None = None, speed: float = 1.0,
                 seed: int | None = None, lang: str = "en-us", device: str | None = None, precision: str | None = None,
                 weights: str | None = None, memory_budget: str | None = None, model_id: str | None = None,
                 dtype: str = "float32") -> None:
        self.defaults = (voice, speed, seed, lang)
        model_id = model_id if model_id is not None else model_identity(weights)
        self.job = None if output_dir is None else Job(output_dir, fmt, model_id)
        self.synth = Synthesizer(device, precision, weights, memory_budget, lang, model_id, dtype).load()

    def __call__(self, batch: dict) -> dict:
        if "text" not in batch:
            raise InputError(f"a batch needs a 'text' column; it has {', '.join(batch) or 'none'}")
        if self.job is not None and "id" not in batch:
            raise InputError("writing files needs an 'id' column (the file names); add one, or leave output_dir "
                             "out to get the audio as a column")
        n = len(batch["text"])
        items = [_item(batch, i).filled(*self.defaults) for i in range(n)]
        out = {k: [] for k in _RESULT}
        audios = []
        for result, audio in self.synth.run(items, self.job):
            for k in out:
                out[k].append(getattr(result, k))
            # the word timestamps as JSON text: a column of ragged lists of records is more than Arrow needs to carry
            out["words"][-1] = None if result.words is None else json.dumps(result.words, ensure_ascii=False)
            audios.append(audio if audio is not None else np.zeros(0, np.float32))
        columns = {k: v for k, v in batch.items() if k not in out}
        columns.update({k: np.array(v, dtype=object) for k, v in out.items()})
        columns["seconds"] = np.array([s if s is not None else np.nan for s in out["seconds"]], dtype=np.float64)
        if self.job is None:
            columns["audio"] = np.array(audios + [None], dtype=object)[:-1]  # ragged: one array per row
        return columns

    def __del__(self) -> None:
        synth = getattr(self, "synth", None)
        if synth is not None:
            synth.close()


def actor_resources() -> dict:
    """One GPU per actor where the cluster has GPUs, else one CPU."""
    import ray

    gpus = int(ray.cluster_resources().get("GPU", 0))
    return {"num_gpus": 1, "actors": gpus} if gpus else {"num_cpus": 1, "actors": 1}


def run_ray(manifest, opts: Options, address: str | None = None, batch_size: int = 16, actors: int | None = None,
            progress_every: float = 10.0) -> Summary:
    """`tilewave batch --ray [ADDRESS]`: the items not yet done through KokoroSynthesizer actors on a Ray
    cluster (a local one when `address` is None); the actors write the files, this driver the results log."""
    import ray

    start = time.perf_counter()
    items, job, todo, _ = plan(manifest, opts)
    refused = [r for r in map(_refused, todo, [job] * len(todo)) if r is not None]
    job.append(refused)  # a speed or seed that is no number cannot ride in Ray Data's typed columns
    todo_ray = [i for i in todo if i.id not in {r.id for r in refused}]
    if todo_ray:
        owned = not ray.is_initialized()
        if owned:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        try:
            ray.data.DataContext.get_current().enable_progress_bars = False  # ours is the one line to read
            resources = actor_resources()
            size = resources.pop("actors") if actors is None else actors
            rows = [{c: getattr(i, c) for c in COLUMNS} for i in todo_ray]
            ds = ray.data.from_items(rows).map_batches(
                KokoroSynthesizer, batch_size=batch_size, batch_format="numpy",
                fn_constructor_kwargs=dict(output_dir=str(job.dir), fmt=opts.fmt, voice=opts.voice, speed=opts.speed,
                                           seed=opts.seed, lang=opts.lang, device=opts.device,
                                           precision=opts.precision, weights=opts.weights,
                                           memory_budget=opts.memory_budget, model_id=job.model_id,
                                           dtype=opts.dtype),
                compute=ray.data.ActorPoolStrategy(size=size), **resources)
            try:
                _collect(ds, job, len(todo_ray), progress_every)
            except ray.exceptions.RayTaskError as exc:
                if isinstance(exc.cause, TilewaveError):  # the actors' weights or settings: the user's message
                    raise exc.cause from None
                raise
        finally:
            if owned:
                ray.shutdown()
    return finish(items, job, todo, start)


def _refused(item: Item, job: Job) -> Result | None:
    try:
        check_speed(item.speed)
        check_seed(item.seed)
    except InputError as exc:
        return Result(item.id, job.key(item), "error", error=str(exc))
    return None


_RESULT = ("id", "key", "status", "file", "seconds", "phonemes", "words", "error")  # Result's fields, in order


def _collect(ds, job: Job, total: int, progress_every: float) -> None:
    progress = Progress(total, progress_every)
    try:
        for batch in ds.select_columns(list(_RESULT)).iter_batches(batch_size=None, batch_format="numpy"):
            results = [Result(*(_value(v) for v in row)) for row in zip(*(batch[k] for k in _RESULT))]
            for r in results:
                r.words = None if r.words is None else json.loads(r.words)
            job.append(results)
            for r in results:
                progress.advance(r)
    finally:
        progress.close()
