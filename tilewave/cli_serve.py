"""`tilewave serve`: the HTTP API (tilewave/server/app.py) on uvicorn."""
from __future__ import annotations

import sys

from tilewave.cli_common import add_kokoro_args
from tilewave.errors import InputError, TilewaveError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("serve", help="serve text to speech over HTTP (POST /v1/audio/speech, GET /voices)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="serve on Ray Serve, on the cluster at ADDRESS or a local one (one replica per GPU)")
    p.add_argument("--replicas", type=int, help="with --ray: replicas (default: one per GPU, else one)")
    add_kokoro_args(p)
    p.set_defaults(run=run)


def run(args) -> int:
    if args.ray is not None:
        from tilewave.distributed.serve import run_serve

        run_serve(args.ray or None, args.host, args.port, args.replicas, lang=args.lang, device=args.device,
                  weights=args.weights, precision=args.precision, memory_budget=args.memory_budget)
        return 0
    import uvicorn

    from tilewave.engine import Session
    from tilewave.server.app import create_app

    try:
        session = Session(lang=args.lang, device=args.device, weights=args.weights, precision=args.precision,
                          memory_budget=args.memory_budget)
        app = create_app(session=session)
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    with session:
        uvicorn.run(app, host=args.host, port=args.port)
    return 0
