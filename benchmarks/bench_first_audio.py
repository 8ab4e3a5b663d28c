"""First audio of a long text: from the request to its first streamed chunk, in the engine and through HTTP.

    python benchmarks/bench_first_audio.py [--device cuda] [--chars 2000] [--reps 5] [--json F]

One process loads Kokoro once. Engine: `Session.stream(text)` to the first Chunk out of the iterator, with the
parts of that time measured apart in the same rounds: cutting and phonemizing the first chunk
(`session.pipeline.iter_chunks`' head, what `stream` waits for before it queues it; the rest of the text is
phonemized meanwhile), the whole text for comparison (`session.pipeline.chunks`), and the model call of the
first chunk alone (`session.speak` of its phonemes). HTTP: the real app (server.app.create_app) under uvicorn on 127.0.0.1,
POST /v1/audio/speech streamed as pcm, to the first audio byte. Every round uses a different text of the same
length (a different start in the sentences) and seed; a warm-up pass over every text first (kernels compile,
memory is allocated, and on a GPU the graph buckets of the first chunks are recorded: steady state). Medians,
with min and max.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx2 as httpx  # noqa: E402

from benchmarks.bench_server import SENTENCES, machine  # noqa: E402
from tilewave.server.local import serve  # noqa: E402
from tilewave.engine import Session  # noqa: E402
from tilewave.engine.pipeline import resolve_device  # noqa: E402
from tilewave.engine.session import FIRST_CHUNK_PHONEMES, load_model  # noqa: E402
from tilewave.server import app as app_module  # noqa: E402
from tilewave.server.app import create_app  # noqa: E402


def long_text(chars: int, start: int) -> str:
    """About `chars` characters of whole sentences, starting at sentence `start` (cycling)."""
    out, i = [], start
    while sum(len(s) + 1 for s in out) < chars:
        out.append(SENTENCES[i % len(SENTENCES)])
        i += 1
    return " ".join(out)


def engine_round(session: Session, text: str, seed: int, first_limit: int = FIRST_CHUNK_PHONEMES) -> dict:
    t0 = time.perf_counter()
    chunks = session.pipeline.chunks(text, False, first_limit, session.normalize)
    t_phonemize = time.perf_counter() - t0
    t0 = time.perf_counter()
    session.pipeline.iter_chunks(text, False, first_limit, session.normalize)  # what stream waits for
    t_head = time.perf_counter() - t0
    drain(session)
    t0 = time.perf_counter()
    session.speak(chunks[0].phonemes, seed=seed, phonemes=True)
    t_first_model = time.perf_counter() - t0
    t0 = time.perf_counter()
    request = session.stream(text, seed=seed, first_limit=first_limit)
    first = next(iter(request))
    t_first = time.perf_counter() - t0
    request.cancel()
    drain(session)
    return {"first_audio": t_first, "phonemize_all": t_phonemize, "phonemize_head": t_head,
            "first_chunk_alone": t_first_model,
            "chunks": len(chunks), "first_chunk_phonemes": len(chunks[0].phonemes),
            "first_chunk_audio_s": first.audio.size / 24000}


def drain(session: Session) -> None:
    """Wait until the worker is idle: a cancelled request's batch in flight finishes before the next round."""
    session.speak("hˈɛlO.", phonemes=True, seed=0)


def http_round(url: str, text: str, seed: int) -> float:
    body = {"model": "kokoro", "input": text, "response_format": "pcm", "stream_format": "audio", "seed": seed}
    with httpx.Client(timeout=120) as http:
        t0 = time.perf_counter()
        with http.stream("POST", f"{url}/v1/audio/speech", json=body) as r:
            if r.status_code != 200:
                raise RuntimeError(f"HTTP {r.status_code}: {r.read()[:200]!r}")
            for part in r.iter_raw():
                if part:
                    return time.perf_counter() - t0
    raise RuntimeError("a 200 response with no audio")


def stats(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1e3:.1f} ms (min {min(xs) * 1e3:.1f}, max {max(xs) * 1e3:.1f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-graphs", action="store_true", help="every stage eager (Session(cuda_graphs=False))")
    ap.add_argument("--precision", default="tf32x3")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--first-limit", type=int, default=FIRST_CHUNK_PHONEMES,
                    help="the first chunk's phoneme limit (the server's too, in this process)")
    ap.add_argument("--no-http", action="store_true", help="the engine only (no server, no HTTP rounds)")
    args = ap.parse_args()
    device = resolve_device(args.device)
    model = load_model(None, str(device))
    session = Session(device, args.precision, model=model, cuda_graphs=not args.no_graphs, dtype=args.dtype).load()
    app_module.FIRST_CHUNK_PHONEMES = args.first_limit  # the app serves in this process (tilewave.server.local)
    texts = [long_text(args.chars, r * 3) for r in range(args.reps + 1)]
    for text in texts:  # warm-up, every text once: kernels compile; on a GPU each first chunk's graph bucket is recorded
        engine_round(session, text, 999, args.first_limit)
    engine = [engine_round(session, texts[r], r, args.first_limit) for r in range(args.reps)]
    http = []
    if not args.no_http:
        with serve(create_app(session), timeout=600) as url:  # a GPU server warms its batches up before ready
            http_round(url, texts[-1], 999)  # warm-up
            for r in range(args.reps):
                http.append(http_round(url, texts[r], r))
                time.sleep(0.05)  # the server sees the hang-up and cancels
                drain(session)
    session.close()
    facts = machine()
    print(f"machine: {facts['cpu']}, {facts['cores']} cores{', ' + facts['gpu'] if 'gpu' in facts else ''}; "
          f"torch {facts['torch']}, triton {facts['triton']}; device {device}; {facts['date']}; "
          f"{'eager' if args.no_graphs or device.type != 'cuda' else 'from CUDA graphs'}; precision "
          f"{args.precision}, dtype {args.dtype}, first chunk at most {args.first_limit} phonemes")
    print(f"text: {len(texts[0])} characters, {engine[0]['chunks']} chunks, first chunk "
          f"{engine[0]['first_chunk_phonemes']} phonemes -> {engine[0]['first_chunk_audio_s']:.2f} s of audio")
    print(f"  engine, request -> first chunk:        {stats([e['first_audio'] for e in engine])}")
    print(f"    phonemize the whole text (not waited for) {stats([e['phonemize_all'] for e in engine])}")
    print(f"    of which: phonemize the first chunk  {stats([e['phonemize_head'] for e in engine])}")
    print(f"              the first chunk's model    {stats([e['first_chunk_alone'] for e in engine])}")
    if http:
        print(f"  HTTP, request -> first audio byte:     {stats(http)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": facts, "device": str(device), "args": vars(args),
                                               "engine": engine, "http": http}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
