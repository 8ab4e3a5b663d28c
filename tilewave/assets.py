"""What tilewave keeps on disk between runs (weights, voice packs): where its cache is, a file's digest, and writes
that never leave half a file or half a folder behind, so a crash or a refused download costs only the next start.

Below every other tilewave module: it imports only the standard library, so the models and the engine can share it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """The cache root: the argument, else $TILEWAVE_CACHE, else $XDG_CACHE_HOME/tilewave, else ~/.cache/tilewave."""
    if override is not None:
        return Path(override)
    if os.environ.get("TILEWAVE_CACHE"):
        return Path(os.environ["TILEWAVE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tilewave"


def sha256(path: str | os.PathLike) -> str:
    """The hex sha256 of a file, read in 4 MiB blocks (a weights file is never read into memory whole)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def atomic_file(path: str | os.PathLike, suffix: str = ".tmp", fsync: bool = False) -> Iterator[Path]:
    """A temporary name beside `path` (its folder made) for the block to write; it replaces `path` only when the
    block ends without an exception, and is removed either way: readers see the old file or the whole new one,
    never a part.

    The name is hidden and unique to this writer (`.<name>.<random><suffix>`, from mkstemp: two threads of one
    process never share it), so a folder's readers can pass it over and its owner can sweep a killed writer's
    leftovers by `suffix` (the batch jobs' `.partial`). The new file is 0o644, as a plain write would leave it
    and not mkstemp's 0o600: caches and outputs are read by other users. `fsync` puts the bytes on disk before
    the rename, for files whose presence is taken as done after a power loss (a batch item's audio); a cache
    checked on every load can skip it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if fsync:
            fd = os.open(tmp, os.O_RDWR)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.chmod(tmp, 0o644)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """A new empty folder beside `path` for the block to fill; renamed to `path` (the old one moved aside, then
    deleted) only when the block ends without an exception, and removed otherwise: a broken install never leaves
    half a set of files behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        yield tmp
        old = path.with_name(f".{path.name}-old-{os.getpid()}")
        if path.exists():
            path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
