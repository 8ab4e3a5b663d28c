"""`tilewave serve`: the HTTP API (tilewave/server/app.py) on uvicorn."""
from __future__ import annotations

import argparse
import os
import sys

from tilewave.cli.common import add_kokoro_args
from tilewave.errors import InputError, TilewaveError

API_KEY_ENV = "TILEWAVE_API_KEY"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("serve", help="serve OpenAI's speech API over HTTP (POST /v1/audio/speech, a page at /)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", default=os.environ.get(API_KEY_ENV),
                   help=f"require 'Authorization: Bearer KEY' on /v1/* (default: ${API_KEY_ENV}; unset: no key)")
    p.add_argument("--max-requests", type=int, default=64,
                   help="requests held at once, queued or being made; more are answered 503 (default 64)")
    p.add_argument("--shutdown-timeout", type=float, default=3.0, metavar="S",
                   help="on SIGTERM, seconds to let streams in flight finish before they are cancelled (default 3)")
    p.add_argument("--warm-up", action=argparse.BooleanOptionalAction, default=None,
                   help="before answering ready, run batches of 1-16 short sentences so that kernels compile and "
                        "graphs are captured then, not in clients' requests (default: on a GPU)")
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="serve on Ray Serve, on the cluster at ADDRESS or a local one (one replica per GPU)")
    p.add_argument("--replicas", type=int, help="with --ray: replicas (default: one per GPU, else one)")
    add_kokoro_args(p)
    p.set_defaults(run=run)


def run(args) -> int:
    if args.ray is not None:
        from tilewave.distributed.serve import run_serve

        run_serve(args.ray or None, args.host, args.port, args.replicas, lang=args.lang, device=args.device,
                  weights=args.weights, precision=args.precision, dtype=args.dtype, memory_budget=args.memory_budget)
        return 0
    import uvicorn

    from tilewave.engine import Session
    from tilewave.engine.process import configure_process
    from tilewave.server.app import create_app

    try:
        configure_process(args.device, args.memory_budget)
        session = Session(lang=args.lang, device=args.device, weights=args.weights, precision=args.precision,
                          dtype=args.dtype,
                          memory_budget=args.memory_budget, max_requests=args.max_requests)
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    failed = []

    def stop(exc) -> None:
        failed.append(exc)
        print(f"error: {exc}", file=sys.stderr)
        server.should_exit = True

    app = create_app(session, api_key=args.api_key or None, on_load_error=stop, warm_up=args.warm_up)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port,
                                           timeout_graceful_shutdown=args.shutdown_timeout))
    with session:
        server.run()
    if failed:
        return 2 if isinstance(failed[0], InputError) else 1
    return 0
