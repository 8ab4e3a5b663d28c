"""A text's chunks made in a second process while this one starts: `tilewave say` forks one before it imports
torch, so that the phonemizer's import (the phonemizer package and espeak) and the text's phonemes come in the
time torch's import takes instead of after it (its cost, in benchmarks/RESULTS.md, is what the child's
imports take of the cores they share with torch's).

The child is forked before torch or any thread exists in the parent, imports nothing but tilewave.text and the
phonemizer, and sends back JSON (the chunks, or the message of the InputError the text raised). Where fork is
missing, or the child fails in any other way, `result()` returns None and the caller phonemizes in-process: the
second process is a start-up saving, never a requirement.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sys

from tilewave.errors import InputError
from tilewave.text.chunking import TextChunk, Word

log = logging.getLogger(__name__)


class Ahead:
    """The chunks of one text, being made in a forked child (see the module's docstring)."""

    def __init__(self, pid: int | None, read_fd: int | None) -> None:
        self._pid, self._fd = pid, read_fd

    def close(self) -> None:
        """Stop the child if its chunks were not collected (the caller failed first)."""
        if self._pid is not None:
            import signal

            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            os.close(self._fd)
            self._pid = None

    def __enter__(self) -> "Ahead":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def result(self) -> list[TextChunk] | None:
        """The chunks Pipeline(lang).chunks would give (InputError as it would raise it), or None."""
        if self._pid is None:
            return None
        with os.fdopen(self._fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        try:
            answer = json.loads(data) if os.waitstatus_to_exitcode(status) == 0 else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            log.warning("the text's second process failed (exit status %s); phonemizing here", status)
            return None
        if "input_error" in answer:
            raise InputError(answer["input_error"])
        return [TextChunk(c["text"], c["phonemes"], tuple(Word(*w) for w in c["words"]), c["pause"], c["voice"],
                          c["speed"]) for c in answer["chunks"]]


def phonemize_ahead(text: str, lang: str, normalize: bool = True) -> Ahead:
    """Start making `text`'s chunks in a child process; Ahead.result() collects them."""
    if not hasattr(os, "fork") or "torch" in sys.modules:  # fork after torch: its threads' locks in the child
        return Ahead(None, None)
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return Ahead(None, None)
    if pid:
        os.close(write_fd)
        return Ahead(pid, read_fd)
    status = 1
    try:  # the child: whatever happens, it leaves through os._exit (no parent's atexit, no buffered output twice)
        os.close(read_fd)
        answer = _chunks(text, lang, normalize)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(json.dumps(answer).encode())
        status = 0
    except BaseException:  # noqa: BLE001 - the parent sees a failed child and phonemizes itself
        pass
    finally:
        os._exit(status)


def _chunks(text: str, lang: str, normalize: bool) -> dict:
    from tilewave.text.frontend import speakable_chunks
    from tilewave.text.languages import phonemizer_for

    try:
        chunks = speakable_chunks(text, phonemizer_for(lang), lang, normalize)
    except InputError as exc:
        return {"input_error": str(exc)}
    return {"chunks": [{"text": c.text, "phonemes": c.phonemes, "words": [list(w) for w in c.words], "pause": c.pause,
                        "voice": c.voice, "speed": c.speed} for c in chunks]}
