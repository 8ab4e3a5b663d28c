"""`tilewave batch INPUT OUTPUT_DIR`: a manifest of texts -> one audio file per item and OUTPUT_DIR/results.jsonl,
in this process or with --ray on a Ray cluster. A rerun makes only what is not yet written."""
from __future__ import annotations

import sys

from tilewave.cli.common import add_kokoro_args
from tilewave.distributed.synth import WINDOW
from tilewave.errors import InputError, TilewaveError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "batch", help="speak a manifest of texts into one audio file each (resumable; --ray for a Ray cluster)",
        description="Speak every item of INPUT (a .jsonl or .csv with id, text and optional voice, speed, seed, "
                    "lang; or a folder of .txt files) into OUTPUT_DIR/<id>.<format>, and write the results "
                    "manifest OUTPUT_DIR/results.jsonl (per item: file, seconds, phonemes, or the error). A rerun "
                    "skips the items already written; a bad item is recorded and the others go on.")
    p.add_argument("input", metavar="INPUT", help="the manifest (.jsonl, .csv) or a folder of .txt files")
    p.add_argument("output_dir", metavar="OUTPUT_DIR", help="where the audio files and results.jsonl go")
    p.add_argument("--format", dest="fmt", default="wav", choices=["wav", "flac", "ogg", "mp3"])
    p.add_argument("--voice", metavar="NAME|PATH|BLEND", help="the voice of items that name none")
    p.add_argument("--speed", type=float, default=1.0, help="the speed of items that give none (0.5-2.0)")
    p.add_argument("--seed", type=int, help="the seed of items that give none (repeatable audio)")
    p.add_argument("--retry-failed", action="store_true",
                   help="make the items an earlier run refused again (by default a rerun keeps their errors)")
    p.add_argument("--in-flight", type=int, default=WINDOW, metavar="N",
                   help=f"items submitted ahead of the one being written, in one process (default {WINDOW})")
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="run on a Ray cluster at ADDRESS (host:port), or on a local one when no address is given")
    p.add_argument("--actors", type=int, help="with --ray: engine actors (default: one per GPU, else one)")
    p.add_argument("--batch-size", type=int, default=16, help="with --ray: items per map_batches batch")
    add_kokoro_args(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from tilewave.distributed.local import Options, run_local
    from tilewave.engine.voice_catalog import request_language

    try:  # the manifest's items without a language of their own: the one --lang names, else --voice's
        lang = request_language(args.lang, args.voice)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    opts = Options(args.output_dir, args.fmt, args.voice, args.speed, args.seed, lang, args.device,
                   args.precision, args.weights, args.memory_budget, dtype=args.dtype, retry_failed=args.retry_failed)
    try:
        for flag, value in (("--in-flight", args.in_flight), ("--actors", args.actors), ("--batch-size", args.batch_size)):
            if value is not None and value < 1:
                raise InputError(f"{flag} must be at least 1, got {value}")
        if args.ray is None:
            summary = run_local(args.input, opts, args.in_flight)
        else:
            from tilewave.distributed.ray_data import run_ray

            summary = run_ray(args.input, opts, address=args.ray or None, batch_size=args.batch_size,
                              actors=args.actors)
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(summary.format())
    for r in summary.results:
        if r.status != "ok":
            print(f"  {r.id}: {r.error}", file=sys.stderr)
    return 0 if summary.failed == 0 else 3
