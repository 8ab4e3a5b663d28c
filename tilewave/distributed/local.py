"""A batch run: the manifest's items not yet done -> their files and the results manifest, in this process
(run_local) or on a Ray cluster (ray_data.run_ray), with the same progress line and summary."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from tilewave.distributed.jobs import Item, Job, Result, model_identity, read_manifest
from tilewave.distributed.synth import WINDOW, Synthesizer


@dataclass
class Options:
    """What a run shares: the output, the defaults of items that give none, the engine's settings."""
    output_dir: str
    fmt: str = "wav"
    voice: str | None = None
    speed: float = 1.0
    seed: int | None = None
    lang: str = "en-us"
    device: str | None = None
    precision: str | None = None
    weights: str | None = None
    memory_budget: str | None = None
    dtype: str = "float32"
    retry_failed: bool = False  # make the items refused by an earlier run again


@dataclass
class Summary:
    written: int
    skipped: int
    failed: int
    audio_seconds: float
    wall_seconds: float
    results: list[Result]

    def format(self) -> str:
        rate = self.audio_seconds / max(self.wall_seconds, 1e-9)
        return (f"{self.written} written, {self.skipped} already done, {self.failed} failed; {self.audio_seconds:.1f} s "
                f"of audio in {self.wall_seconds:.1f} s ({rate:.2f} s of audio per second)")


class Progress:
    """Items/s, audio seconds per second and the time left: a rich bar on a terminal, else a line on stderr
    every `every` seconds."""

    def __init__(self, total: int, every: float = 10.0, console=None) -> None:
        from rich.console import Console

        self.total, self.every, self.done, self.audio = total, every, 0, 0.0
        self.start = self._last = time.perf_counter()
        self.console = console or Console(stderr=True)
        self._bar = None
        if self.console.is_terminal and total:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn

            self._bar = Bar(TextColumn("speaking"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                            TimeRemainingColumn(), console=self.console, transient=True)
            self._task = self._bar.add_task("speaking", total=total, rate="")
            self._bar.start()

    def _rates(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        return f"{self.done / elapsed:.2f} items/s, {self.audio / elapsed:.2f} s of audio/s"

    def line(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        eta = (self.total - self.done) * elapsed / self.done if self.done else float("inf")
        return f"{self.done}/{self.total} items, {self._rates()}, ETA {eta:.0f} s"

    def advance(self, result: Result) -> None:
        self.done += 1
        self.audio += result.seconds or 0.0
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, rate=self._rates())
        elif time.perf_counter() - self._last >= self.every:
            self._last = time.perf_counter()
            print(self.line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def plan(manifest, opts: Options) -> tuple[list[Item], Job, list[Item], dict[str, Result]]:
    """(every item with the defaults filled in, the job, the items still to make, the finished records)."""
    items = [i.filled(opts.voice, opts.speed, opts.seed, opts.lang) for i in read_manifest(manifest)]
    job = Job(opts.output_dir, opts.fmt, model_identity(opts.weights))
    todo, done = job.todo(items, opts.retry_failed)
    todo.sort(key=lambda i: i.lang)  # one language's session at a time (stable: manifest order within)
    return items, job, todo, done


def finish(items: list[Item], job: Job, todo: list[Item], start: float) -> Summary:
    results = job.finish(items)
    made = {i.id for i in todo}
    ok = [r for r in results if r.status == "ok"]
    return Summary(written=sum(r.id in made for r in ok), skipped=sum(r.id not in made for r in ok),
                   failed=sum(r.status != "ok" for r in results),
                   audio_seconds=sum(r.seconds or 0.0 for r in ok if r.id in made),
                   wall_seconds=time.perf_counter() - start, results=results)


def run_local(manifest, opts: Options, in_flight: int = WINDOW, progress_every: float = 10.0) -> Summary:
    """Make every item not yet done in this process, through one engine's batches (`in_flight` items submitted
    ahead of the one being written: what a kill may lose); the results manifest is OUTPUT_DIR/results.jsonl."""
    start = time.perf_counter()
    items, job, todo, _ = plan(manifest, opts)
    synth = Synthesizer(opts.device, opts.precision, opts.weights, opts.memory_budget, opts.lang, job.model_id,
                        opts.dtype)
    progress = Progress(len(todo), progress_every)
    try:
        for result, _ in synth.run(todo, job, in_flight):
            job.append([result])
            progress.advance(result)
    finally:
        progress.close()
        synth.close()
    return finish(items, job, todo, start)
