"""`tilewave say` as a whole process beside a plain onnxruntime script: start to audio file written, on a CPU.

    python benchmarks/bench_cpu_startup.py [--rounds 5] [--text "..."] [--server] [--json F]

Each round runs, as separate processes, one after the other (interleaved, so that a machine shared with other
work slows them alike): `python -m tilewave say TEXT -o out.wav --device cpu --seed 0`, the same with torch
imported first (so that say phonemizes in its own process, not in a forked one), and ORT_SCRIPT below —
what kokoro-onnx does: the same espeak phonemizer (tilewave.text, which imports no torch), the shipped int8 ONNX on
onnxruntime's CPU provider, the same voice row, soundfile, then the first say with --dtype float32 (the default
is auto). Per process: wall time (fork to exit), CPU time (user + system) and peak resident set, from os.wait4. A
first untimed round of each fills the caches (the dequantized weights, the page cache). Medians, with min and max.
With --server, also `say --server URL` against a `tilewave serve` started first on 127.0.0.1 (its own process, idle
between requests; its CPU time is not the say's).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# 48 phonemes with en-us espeak, 50 tokens with the two pads (the run prints the count)
TEXT = "The little boat drifted slowly past the harbour."

ORT_SCRIPT = r"""
import sys
import numpy as np
import onnxruntime as ort
import soundfile as sf
from tilewave.text import phonemizer_for, text_chunks, vocab

onnx_path, voice_path, text, out = sys.argv[1:5]
chunk, = text_chunks(text, phonemizer_for("en-us"), lang="en-us")
table = vocab()
tokens = np.array([[0, *(table[c] for c in chunk.phonemes), 0]], dtype=np.int64)
style = np.load(voice_path)[len(chunk.phonemes) - 1].reshape(1, 256).astype(np.float32)
session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
audio = session.run(None, {"tokens": tokens, "style": style, "speed": np.ones(1, np.float32)})[0]
sf.write(out, audio.reshape(-1), 24000)
print(len(chunk.phonemes), "phonemes")
"""


def timed(cmd: list[str]) -> dict:
    """Wall seconds, CPU seconds and peak resident MiB of one child process, which must succeed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    out, err = child.stdout.read(), child.stderr.read()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed ({child.returncode}): {err.strip()[-2000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024,
            "said": out.strip().splitlines()[-1]}


@contextlib.contextmanager
def local_server():
    """A `tilewave serve` on a free loopback port, ready (its /health answers 200): yields its URL, stops it after."""
    from tilewave.cli.say_server import healthy

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "tilewave", "serve", "--host", "127.0.0.1", "--port", str(port),
                               "--device", "cpu"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not healthy(url):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tilewave serve did not become ready at {url}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def machine() -> str:
    import torch

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo") if line.startswith("flags")), []))
    simd = " ".join(f for f in ("avx", "fma", "avx2", "avx512f") if f in flags)
    return (f"{cpu}, {os.cpu_count()} cores ({simd}), torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"load average {os.getloadavg()[0]:.1f} at the start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--text", default=TEXT)
    ap.add_argument("--server", action="store_true", help="also `say --server` against a local tilewave serve")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    with local_server() if args.server else contextlib.nullcontext() as url:
        run(args, url)


def run(args, url: str | None) -> None:

    import numpy as np

    from tilewave.engine.voices import load_voice
    from tilewave.models.kokoro import onnx_weights_path

    tmp = Path(tempfile.mkdtemp(prefix="bench_cpu_startup_"))
    voice = tmp / "af_heart.npy"
    np.save(voice, load_voice("af_heart").reshape(-1, 256).numpy())
    runs = {
        "tilewave say": [sys.executable, "-m", "tilewave", "say", args.text, "-o", str(tmp / "tilewave.wav"),
                         "--device", "cpu", "--seed", "0"],
        # the same say with torch imported before it starts, so the text is phonemized in-process (no fork: see
        # tilewave.text.ahead) - the same-run peer of the second process's saving
        "say, no 2nd process": [sys.executable, "-c", "import torch; from tilewave.cli import entry; entry()", "say",
                                args.text, "-o", str(tmp / "tilewave_alone.wav"), "--device", "cpu", "--seed", "0"],
        "onnxruntime script": [sys.executable, "-c", ORT_SCRIPT, str(onnx_weights_path()), str(voice), args.text,
                               str(tmp / "ort.wav")],
    }
    # say's default dtype is auto (bfloat16 on a CPU with native bfloat16): float32 named, the same say as before
    runs["say --dtype float32"] = [*runs["tilewave say"], "--dtype", "float32"]
    if url is not None:
        runs["say --server"] = [sys.executable, "-m", "tilewave", "say", args.text, "-o", str(tmp / "server.wav"),
                                "--seed", "0", "--server", url]
    print(f"# {machine()}")
    results: dict[str, list[dict]] = {name: [] for name in runs}
    for name, cmd in runs.items():  # untimed: fills the weight cache and the page cache
        print(f"# {name}: {timed(cmd)['said']}")
    for r in range(args.rounds):
        for name, cmd in runs.items():
            results[name].append(timed(cmd))
        print(f"# round {r + 1}: " + "  ".join(f"{n} {rs[-1]['wall_s']:.2f} s" for n, rs in results.items()),
              flush=True)

    def med(name, key):
        return statistics.median(x[key] for x in results[name])

    print(f"\n{'process':<20} {'wall s':>8} {'(min-max)':>13} {'CPU s':>7} {'peak MiB':>9}")
    for name, rs in results.items():
        walls = [x["wall_s"] for x in rs]
        print(f"{name:<20} {med(name, 'wall_s'):8.2f} {f'({min(walls):.2f}-{max(walls):.2f})':>13} "
              f"{med(name, 'cpu_s'):7.2f} {med(name, 'peak_mib'):9.0f}")
    a, _, b, *others = runs
    for c in others:
        print(f"{c} / {b}: wall {med(c, 'wall_s') / med(b, 'wall_s'):.2f}, peak memory "
              f"{med(c, 'peak_mib') / med(b, 'peak_mib'):.2f}")
    print(f"{a} / {b}: wall {med(a, 'wall_s') / med(b, 'wall_s'):.2f}, CPU {med(a, 'cpu_s') / med(b, 'cpu_s'):.2f}, "
          f"peak memory {med(a, 'peak_mib') / med(b, 'peak_mib'):.2f}  (medians of {args.rounds} rounds, "
          f"load average {os.getloadavg()[0]:.1f} at the end)")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "text": args.text, "results": results}, indent=1))


if __name__ == "__main__":
    main()
