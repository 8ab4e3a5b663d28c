"""The HTTP server under concurrent load: tilewave as it is against a one-request-at-a-time baseline, one run.

    python benchmarks/bench_server.py [--clients 8] [--requests 2] [--text-words 24] [--device cpu] [--json F]

One process loads the real Kokoro model once (session.load_model) and starts the real app (server.app.create_app)
twice under uvicorn on 127.0.0.1 (free ports, tilewave/server/local.py), each over its own Session on that model:

  tilewave       the session as it is: its scheduler batches the chunks of concurrent requests (the policy's
                 max_batch and frame budget).
  one-at-a-time  the same app and session with the policy's max_batch 1. The scheduler takes the oldest
                 request's next chunk first, so with batches of one it runs requests strictly one after another
                 in arrival order, each chunk alone: a server that queues requests and serves them serially.
Both sessions take the same BatchPolicy (engine.policy; the flags below replace its fields) and have graphs of
their own on a GPU.

The load: C client threads (in a child process, benchmarks/load_clients.py, so that they take no GIL from the
server's threads; --clients-in-process runs them in this one, as before S21d), each with its own connection, send
R streamed requests each (POST /v1/audio/speech, stream_format "audio", response_format "pcm", a fixed seed) of
English text: N words cut from the sentences below, a different cut per client and request, the same in both
modes. Request r of every client is one round: the C requests start together (a barrier) and the round ends when
all have ended. Rounds alternate the modes ABBA (round r runs tilewave then the baseline, or the baseline then
tilewave) so that drift of a shared machine hits both alike; a warm-up round per mode comes first, not counted.

Per request: time to the first audio byte and total time, both from the first attempt (a 503 is counted and
retried after its Retry-After). Per mode: requests/s and audio seconds per wall second over the rounds' wall
time, p50/p99 of both times, the mean batch size the scheduler ran, errors (must be 0: exit status 1
otherwise). Loopback only; a hard timeout (--timeout) ends the process by itself, status 2.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks import load_clients  # noqa: E402
from tilewave.server.local import serve  # noqa: E402
from tilewave.engine import SAMPLE_RATE, Session  # noqa: E402
from tilewave.engine.pipeline import resolve_device  # noqa: E402
from tilewave.engine.policy import BatchPolicy  # noqa: E402
from tilewave.engine.process import SWITCH_INTERVAL_S, configure_process  # noqa: E402
from tilewave.engine.session import load_model  # noqa: E402
from tilewave.server.app import create_app  # noqa: E402

SENTENCES = [
    "The morning train left the station a few minutes late.", "She poured the tea and looked out at the rain.",
    "Our meeting has been moved to Thursday afternoon.", "The river was calm, and the boats drifted slowly by.",
    "Please remember to lock the back door before you leave.", "He found an old map folded inside the book.",
    "The children laughed as the kite rose over the hill.", "A light wind carried the smell of fresh bread.",
    "Nobody expected the concert to sell out so quickly.", "The garden needs water after such a dry week.",
    "We walked along the beach until the sun went down.", "The library closes early on public holidays.",
    "His new bicycle was painted a bright shade of green.", "They cooked dinner together and talked for hours.",
    "The small dog barked at every car that passed.", "After the storm, the streets were quiet and clean.",
]


def text_for(client: int, request: int, words: int) -> str:
    """N words from the sentences, starting at a sentence chosen by client and request (deterministic)."""
    start = (client * 5 + request * 3) % len(SENTENCES)
    pool = " ".join(SENTENCES[start:] + SENTENCES[:start]).split()
    while len(pool) < words:
        pool += pool
    return " ".join(pool[:words]).rstrip(",.") + "."


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               "unknown")
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    facts = {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__, "triton": triton_version,
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    if torch.cuda.is_available():
        facts["gpu"] = torch.cuda.get_device_name()
    return facts


def summary(rounds: list, batches: list, errors: list) -> dict:
    results = [r for _, rs in rounds for r in rs]
    wall = sum(w for w, _ in rounds)
    pct = lambda key, q: float(np.percentile([r[key] for r in results], q)) if results else float("nan")  # noqa: E731
    return {"requests": len(results), "wall_s": wall, "requests_per_s": len(results) / wall if wall else 0.0,
            "audio_s_per_s": sum(r["audio_s"] for r in results) / wall if wall else 0.0,
            "ttfa_p50": pct("ttfa", 50), "ttfa_p99": pct("ttfa", 99), "total_p50": pct("total", 50),
            "total_p99": pct("total", 99), "mean_batch": float(np.mean([b.size for b in batches])) if batches else 0.0,
            "errors": len(errors), "error_messages": errors[:10], "busy_retries": sum(r["busy"] for r in results),
            "per_request": results}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=2, help="requests per client per mode (one per round)")
    ap.add_argument("--text-words", type=int, default=24)
    ap.add_argument("--device", default=None)
    ap.add_argument("--weights", default=None)
    ap.add_argument("--warmup", type=int, default=1, help="uncounted rounds per mode first")
    ap.add_argument("--timeout", type=float, default=600.0, help="the whole run's limit, seconds")
    ap.add_argument("--dtype", default="float32", help="the sessions' storage dtype (Session(dtype=...))")
    ap.add_argument("--clients-in-process", action="store_true",
                    help="the client threads in the server's process (the form before S21d: they share its GIL)")
    ap.add_argument("--switch-interval", type=float, default=SWITCH_INTERVAL_S,
                    help="the process's thread switch interval at most this, seconds "
                    "(engine.process.configure_process; default: the engine's)")
    ap.add_argument("--graphed-batches", action=argparse.BooleanOptionalAction, default=None,
                    help="padded batches replay the graphs of their batch bucket (BatchPolicy.padded_batches)")
    ap.add_argument("--record-after", type=int, default=None,
                    help="a batch key's eager calls before its graph is recorded (BatchPolicy.record_after)")
    ap.add_argument("--padded-min", type=int, default=None,
                    help="batches of fewer items run as graphed singles (BatchPolicy.padded_min)")
    ap.add_argument("--fused-albert", action=argparse.BooleanOptionalAction, default=None,
                    help="ALBERT on the fused products (fuse_albert; default: the model's)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout
    # the last resort: whatever hangs (a stuck stream, a server that does not stop), the process ends
    watchdog = threading.Timer(args.timeout + 30, lambda: (print(f"bench_server: past {args.timeout:.0f} s, "
                                                                 "stopping", file=sys.stderr, flush=True), os._exit(2)))
    watchdog.daemon = True
    watchdog.start()

    device = resolve_device(args.device)
    configure_process(device, switch_interval=args.switch_interval)  # as a server's startup does
    model = load_model(args.weights, str(device))  # loaded once, shared by both sessions
    given = {"padded_batches": args.graphed_batches, "padded_min": args.padded_min, "record_after": args.record_after}
    policy = replace(BatchPolicy(), **{k: v for k, v in given.items() if v is not None})
    if device.type == "cuda":
        print("batch policy:", policy)
        if args.fused_albert is not None:
            model.fuse_albert(args.fused_albert)
    sessions = {name: Session(device, model=model, dtype=args.dtype, policy=replace(policy, max_batch=max_batch))
                for name, max_batch in (("tilewave", policy.max_batch), ("one-at-a-time", 1))}
    data = {name: {"rounds": [], "errors": []} for name in sessions}
    with contextlib.ExitStack() as stack:
        if args.clients_in_process:
            send = load_clients.run_round
        else:  # behind a real port the server's threads share the GIL with nothing of the clients'
            clients = load_clients.ClientProcess()
            stack.callback(clients.close)
            send = clients.run_round

        def run_round(url, texts, seeds, deadline):
            out = send(url, texts, seeds, max(0.0, deadline - time.monotonic()))
            results = [dict(r, audio_s=r["bytes"] / 2 / SAMPLE_RATE) for r in out["results"]]
            return out["wall"], results, out["errors"]

        # a server on a GPU warms up (compiles, records graphs) before it says ready: minutes on a fresh machine
        urls, ready_s = {}, {}
        for name, s in sessions.items():
            t0 = time.perf_counter()
            urls[name] = stack.enter_context(serve(create_app(s), timeout=args.timeout))
            ready_s[name] = time.perf_counter() - t0
        print("servers ready (start and warm-up) in " + ", ".join(f"{n} {t:.1f} s" for n, t in ready_s.items()),
              flush=True)
        texts = lambda r: [text_for(c, r, args.text_words) for c in range(args.clients)]  # noqa: E731
        seeds = lambda r: [c * 1000 + r for c in range(args.clients)]  # noqa: E731
        for w in range(args.warmup):  # first batches allocate (CPU) or compile kernels (GPU): not counted
            for name in sessions:
                run_round(urls[name], texts(-1 - w), seeds(-1 - w), deadline)
        start = {name: len(s.batches()) for name, s in sessions.items()}
        for r in range(args.requests):
            order = list(sessions) if r % 2 == 0 else list(sessions)[::-1]  # ABBA against drift
            for name in order:
                if time.monotonic() > deadline:
                    data[name]["errors"].append(f"round {r} not run: past the {args.timeout:.0f} s limit")
                    continue
                wall, results, errors = run_round(urls[name], texts(r), seeds(r), deadline)
                data[name]["rounds"].append((wall, results))
                data[name]["errors"] += errors
                if len(results) + len(errors) < args.clients:
                    data[name]["errors"].append(f"round {r}: {args.clients - len(results) - len(errors)} unfinished")
        stats = {name: summary(d["rounds"], sessions[name].batches()[start[name]:], d["errors"])
                 for name, d in data.items()}

    facts = machine()
    where = facts.get("gpu") if device.type == "cuda" else f"CPU {facts['cpu']}, {facts['cores']} cores"
    print(f"machine: {facts['cpu']}, {facts['cores']} cores{', ' + facts['gpu'] if 'gpu' in facts else ''}; "
          f"torch {facts['torch']}, triton {facts['triton']}; device {device}; {facts['date']}; "
          f"{args.dtype}; switch interval {sys.getswitchinterval() * 1e3:g} ms; clients "
          f"{'in this process' if args.clients_in_process else 'in a process of their own'}")
    print("\n| mode | clients × requests | words / request | requests/s | audio s / wall s | first audio p50 / p99 "
          "| total p50 / p99 | mean batch | errors | 503 retried | when | where |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, s in stats.items():
        print(f"| {name} | {args.clients} × {args.requests} | {args.text_words} | {s['requests_per_s']:.2f} | "
              f"{s['audio_s_per_s']:.2f} | {s['ttfa_p50'] * 1e3:.0f} / {s['ttfa_p99'] * 1e3:.0f} ms | "
              f"{s['total_p50']:.2f} / {s['total_p99']:.2f} s | {s['mean_batch']:.2f} | {s['errors']} | "
              f"{s['busy_retries']} | {facts['date']} | {where} |")
    for name, s in stats.items():
        for message in s["error_messages"]:
            print(f"error ({name}): {message}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": facts, "device": str(device), "args": vars(args),
                                               "modes": stats, "ready_s": ready_s,
                                               "switch_interval_s": sys.getswitchinterval()}, indent=1) + "\n")
    return 1 if any(s["errors"] for s in stats.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
