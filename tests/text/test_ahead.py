"""tilewave.text.ahead: a text's chunks made in a forked child equal the in-process ones, its InputError comes
back as the same error, and a child that fails or a process that has torch already fall back (None)."""
import json
import subprocess
import sys
from pathlib import Path

# Run in a fresh interpreter: the fork needs a process without torch (this test process has it).
SCRIPT = r"""
import json, os, signal, sys
from tilewave.errors import InputError
from tilewave.text import ahead as A

text = sys.argv[1]
out = {}
first = A.phonemize_ahead(text, "en-us")
out["forked"] = first._pid is not None
try:
    got = first.result()
    out["chunks"] = [[c.text, c.phonemes, [list(w) for w in c.words], c.pause] for c in got]
except InputError as exc:
    out["error"] = str(exc)

killed = A.phonemize_ahead(text, "en-us")
os.kill(killed._pid, signal.SIGKILL)
out["killed"] = killed.result() is None

closed = A.phonemize_ahead(text, "en-us")
closed.close()
out["closed"] = closed._pid is None and closed.result() is None

from tilewave.engine.pipeline import Pipeline  # torch now: no more forks
out["after_torch"] = A.phonemize_ahead(text, "en-us")._pid is None
try:
    out["expected"] = [[c.text, c.phonemes, [list(w) for w in c.words], c.pause]
                       for c in Pipeline("en-us").chunks(text)]
except InputError as exc:
    out["expected_error"] = str(exc)
print(json.dumps(out))
"""


def _run(text: str) -> dict:
    run = subprocess.run([sys.executable, "-c", SCRIPT, text], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_the_forked_chunks_are_the_pipelines_with_words_and_pauses():
    text = ("Dr. Smith paid $12.50 at 3:30 pm in the 1990s. [pause:0.4] Then she read "
            "https://example.org/a aloud, twice!\n\nA second paragraph, " + "much longer than the first " * 30 + ".")
    out = _run(text)
    assert out["forked"] and out["killed"] and out["closed"] and out["after_torch"], out
    assert "chunks" in out and len(out["chunks"]) >= 3, out
    assert any(c[3] > 0 for c in out["chunks"]) and all(c[2] for c in out["chunks"] if c[1]), out["chunks"]
    assert out["chunks"] == out["expected"]


def test_the_childs_input_error_is_raised_as_the_pipelines():
    out = _run("... !!! ?")
    assert out["forked"] and "chunks" not in out
    assert out["error"] == out["expected_error"] and "nothing to say" in out["error"]
