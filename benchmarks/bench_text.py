"""The text front end's time (normalize, Markdown, the chunker's cuts) on everyday and adversarial text, beside the
same modules at another git revision, in one process.

    python benchmarks/bench_text.py [--against REV] [--rounds 3]

Each input is run through `normalize`, `plain_text` (where the revision has it) and the chunker's cuts (sentences,
clauses, phrases), as this checkout has them and as REV had them (its normalize.py and chunking.py loaded from
`git show`), one after the other for each input, the median of --rounds taken. A stream's first audio waits for
its first sentence's pass, and a server passes every request's text through it: a pattern whose time grows with the square of a run's length is a
stall a client can cause.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EVERYDAY = ("On Jan. 3rd, 2025 at 9:45 pm, Dr. Smith paid $1,250.50 for 3.5 kg of coffee: 12% off, at "
            "https://example.com/shop (open Mon-Fri 9am-5pm). ") * 16  # ~2,000 characters
INPUTS = {
    "everyday, 2,000 characters": EVERYDAY,
    "20,000 digits": "1" * 20_000,
    "'9-' x 10,000": "9-" * 10_000,
    "'U.' x 10,000": "U." * 10_000,
    "20,000 colons": ":" * 20_000,
}


def _load(name: str, source: str, folder: Path):
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"_rev_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _passes(normalize_module, chunking_module):
    """name -> fn(text): the front end's passes as these modules have them."""
    from tilewave.text import markdown

    passes = {"normalize": normalize_module.normalize,
              "cuts": lambda text: [chunking_module._cut(text, level) for level in range(3)]}
    if normalize_module.__name__.startswith("tilewave"):
        passes["markdown"] = markdown.plain_text
    return passes


def _median_ms(fn, text: str, rounds: int) -> str:
    """The median ms as text, or the exception the pass raised."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        try:
            fn(text)
        except Exception as exc:  # noqa: BLE001 - what a revision did with the input is the result
            return f"{type(exc).__name__}"
        times.append(time.perf_counter() - t0)
    return f"{statistics.median(times) * 1e3:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default="HEAD~1", help="the git revision to time beside this checkout")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from tilewave.text import chunking

    here = _passes(importlib.import_module("tilewave.text.normalize"), chunking)
    with tempfile.TemporaryDirectory() as tmp:
        show = lambda f: subprocess.run(["git", "show", f"{args.against}:tilewave/text/{f}"], cwd=ROOT,  # noqa: E731
                                        check=True, capture_output=True, text=True).stdout
        then = _passes(_load("normalize", show("normalize.py"), Path(tmp)), _load("chunking", show("chunking.py"),
                                                                                  Path(tmp)))
    print(f"# text front end, median of {args.rounds}; this checkout beside {args.against} in one process "
          f"(python {sys.version.split()[0]})")
    print(f"{'input':30} {'pass':10} {'now ms':>10} {args.against + ' ms':>12}")
    for name, text in INPUTS.items():
        for step, fn in here.items():
            now = _median_ms(fn, text, args.rounds)
            before = _median_ms(then[step], text, args.rounds) if step in then else "—"
            print(f"{name:30} {step:10} {now:>10} {before:>12}")


if __name__ == "__main__":
    main()
