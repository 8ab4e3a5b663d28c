"""`tilewave serve`: the HTTP API (tilewave/server/app.py) on uvicorn."""
from __future__ import annotations

import sys

from tilewave.cli_say import add_precision_arg
from tilewave.errors import InputError, TilewaveError
from tilewave.text.espeak import LANGUAGES


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("serve", help="serve text to speech over HTTP (POST /v1/audio/speech, GET /voices)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--lang", default="en-us", choices=LANGUAGES)
    p.add_argument("--device", choices=["cpu", "cuda"], help="where the model runs (default: cuda if present)")
    p.add_argument("--weights", metavar="PATH", help="Kokoro weights (.onnx or .pth; default: the installed int8 ONNX)")
    add_precision_arg(p)
    p.set_defaults(run=run)


def run(args) -> int:
    import uvicorn

    from tilewave.server.app import create_app

    try:
        app = create_app(lang=args.lang, device=args.device, weights=args.weights, precision=args.precision)
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    uvicorn.run(app, host=args.host, port=args.port)
    return 0
