"""A Kokoro forward beside another Python thread, at several thread switch intervals: what the GIL costs the model.

    python benchmarks/diag/gil.py [--device cuda] [--phonemes 77] [--dtype float32] [--precision tf32x3]
                                  [--intervals 0.005,0.0005,0.0001] [--reps 9] [--json F]

PyTorch releases the GIL inside every op, so the thread running a model takes it back after each launch. When
another thread is running Python at that moment, the model's thread waits until the holder is made to drop it,
up to the switch interval (sys.setswitchinterval; 5 ms by default). A server's model thread always has such
neighbours: its requests' phonemes, HTTP handlers, audio encoding (engine/process.py, SWITCH_INTERVAL_S).

One item (the first N phonemes of the benchmark's medium input) through KokoroModel.forward and its audio read
back, on a CUDA device from its graphs (as the engine runs a single), timed on the main thread: alone, beside a
thread spinning in pure Python, and beside a thread phonemizing English text in a loop (what a server's other
requests do; espeak itself runs without the GIL). Each neighbour at each interval; the rounds interleaved, twice.
Medians of --reps ms, and the texts a second the phonemizing thread got through (its own cost of a shorter
interval).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tilewave.engine.runner import KokoroRunner  # noqa: E402
from tilewave.engine.voices import load_voice, style_for  # noqa: E402
from tilewave.harness.model_bench import VOICE, load_kokoro, read_inputs  # noqa: E402
from tilewave.precision import scope  # noqa: E402
from tilewave.text import phonemizer_for, text_chunks  # noqa: E402
from tilewave.text.vocab import encode  # noqa: E402

TEXT = ("On the 3rd of May, 1999, Dr. Smith paid $12.50 for 2 tickets at 7:45 pm. The river bends twice before "
        "it reaches the old mill, where the water runs cold and clear all summer long. ") * 3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--phonemes", type=int, default=77)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--precision", default="tf32x3")
    ap.add_argument("--intervals", default="0.005,0.0005,0.0001")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    dev = torch.device(args.device)
    model, _ = load_kokoro(args.device, args.dtype)
    runner = KokoroRunner(model, cuda_graphs=dev.type == "cuda")
    ps = read_inputs(None)["medium"][:args.phonemes]
    ids = encode(ps).to(dev)
    ref_s = style_for(load_voice(VOICE), len(ps)).reshape(1, -1).to(dev)
    dtype = getattr(torch, args.dtype)

    def forward():
        gen = torch.Generator(dev).manual_seed(0)
        return runner.forward(ids, ref_s, 1.0, gen, dtype=dtype).audio.cpu()

    phonemizer = phonemizer_for("en-us")
    state = {"stop": False, "texts": 0}

    def spin():
        n = 0
        while not state["stop"]:
            n += 1

    def phonemize():
        while not state["stop"]:
            text_chunks(TEXT, phonemizer, lang="en-us")
            state["texts"] += 1

    neighbours = {"alone": None, "a thread spinning in Python": spin, "a thread phonemizing": phonemize}
    intervals = [float(v) for v in args.intervals.split(",")]
    ms: dict[str, list[float]] = {}
    rates: dict[str, list[float]] = {}
    default = sys.getswitchinterval()
    with scope(args.precision):
        for _ in range(3):
            forward()  # graphs recorded, kernels compiled
        for _ in range(2):
            for name, fn in neighbours.items():
                for interval in intervals if fn else [default]:
                    key = f"{name}, {interval * 1e3:g} ms"
                    sys.setswitchinterval(interval)
                    state.update(stop=False, texts=0)
                    thread = threading.Thread(target=fn, daemon=True) if fn else None
                    if thread:
                        thread.start()
                    start = time.perf_counter()
                    for _ in range(args.reps):
                        t0 = time.perf_counter()
                        forward()
                        ms.setdefault(key, []).append((time.perf_counter() - t0) * 1e3)
                    wall = time.perf_counter() - start
                    state["stop"] = True
                    if thread:
                        thread.join()
                    if fn is phonemize:
                        rates.setdefault(key, []).append(state["texts"] / wall)
    sys.setswitchinterval(default)
    print(f"# {args.device}, {args.phonemes} phonemes, {args.dtype}, {args.precision}, torch {torch.__version__}, "
          f"{args.reps} forwards per round, 2 rounds")
    print("| neighbour, switch interval | forward + read-back, median ms (min-max) | texts/s phonemized |")
    print("|---|---|---|")
    for key, v in ms.items():
        rate = f"{statistics.median(rates[key]):.0f}" if key in rates else "—"
        print(f"| {key} | {statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f}) | {rate} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "ms": ms, "texts_per_s": rates}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
