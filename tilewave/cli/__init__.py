"""The `tilewave` command: a thin shell over the harness and the engine.

Building the parser imports no model code, torch or triton: each command imports what it needs when it runs, and
only the parser of the command given is built (all of them for `tilewave --help` or a mistyped command)."""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys

# command -> the function that adds its parser (module:function)
COMMANDS = {
    "say": "tilewave.cli.say:add_parser", "profile": "tilewave.cli.say:add_profile_parser",
    "vocode": "tilewave.cli.vocode:add_parser", "serve": "tilewave.cli.serve:add_parser",
    "voices": "tilewave.cli.voices:add_parser", "phonemize": "tilewave.cli.phonemize:add_parser",
    "batch": "tilewave.cli.batch:add_parser", "tune": "tilewave.harness.tune:add_parser",
}


def _kernel_registry():
    from tilewave.harness.catalogue import load_all_kernels

    return load_all_kernels()


def _test_device(device: str | None) -> str:
    import torch

    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def _use_interpreter_for(argv: list[str]) -> None:
    """`tilewave test` on the CPU runs kernels on Triton's interpreter and `tilewave build` never does; the
    switch is read at the first `import triton`, which an imported module may make at any time, hence this look
    at the raw arguments before anything else."""
    if argv and argv[0] == "build" and os.environ.pop("TRITON_INTERPRET", None) == "1":
        print("note: TRITON_INTERPRET=1 ignored: tilewave build compiles with Triton's GPU compiler", file=sys.stderr)
    if not argv or argv[0] != "test":
        return
    device = None
    for i, a in enumerate(argv):
        if a == "--device" and i + 1 < len(argv):
            device = argv[i + 1]
        elif a.startswith("--device="):
            device = a.split("=", 1)[1]
    if _test_device(device) == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"


def cmd_test(args) -> int:
    import torch

    device = _test_device(args.device)
    if device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but no CUDA device is visible", file=sys.stderr)
        return 2
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        print("error: the CPU kernel tests need TRITON_INTERPRET=1 before triton is imported", file=sys.stderr)
        return 2
    from tilewave.harness.runner import run_tests

    try:
        results = run_tests(_kernel_registry(), args.filter, device, args.seed)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0 if all(r.passed for r in results) else 1


def cmd_bench(args) -> int:
    import torch

    if args.model:
        return _bench_model(args)
    given = [flag for flag, value in (("--batch", args.batch), ("--precision", args.precision),
                                      ("--device", args.device), ("--reps", args.reps), ("--seconds", args.seconds),
                                      ("--inputs", args.inputs), ("--no-official", args.official is False),
                                      ("--graphs", args.graphs))
             if value not in (None, False)]
    if given:
        print(f"error: {', '.join(given)} belong to a model bench: add --model kokoro, bigvgan or decoder",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: tilewave bench times kernels on a GPU, and no CUDA device is visible here", file=sys.stderr)
        return 2
    import triton

    from tilewave.harness.bench import as_records, run_bench
    from tilewave.harness.peaks import device_peaks

    peaks = device_peaks(remeasure=args.remeasure_peaks)
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}")
    print("# peaks: " + "  ".join(f"{k} {v:,.0f}" for k, v in peaks.items()))
    try:
        results = run_bench(_kernel_registry(), args.filter, args.dtype, peaks, args.verbose)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "triton": triton.__version__, "peaks": peaks, "results": as_records(results)}, f, indent=1)
    return 0


def _bench_model(args) -> int:
    import torch

    from tilewave.errors import InputError
    from tilewave.harness import model_bench
    from tilewave.precision import DEFAULT

    try:
        if args.filter or args.verbose:
            raise InputError("-f and -v select and detail kernel rows; a --model bench takes neither")
        if args.dtype and len(args.dtype) > 1:
            raise InputError(f"--model takes one --dtype, got {', '.join(args.dtype)}")
        opt = model_bench.Options(
            model=args.model, device=args.device or ("cuda" if torch.cuda.is_available() else "cpu"),
            precisions=(args.precision or DEFAULT,), dtype=args.dtype[0] if args.dtype else "float32",
            batches=model_bench.parse_batches(args.batch) if args.batch is not None else (), reps=args.reps,
            seconds=args.seconds, inputs=args.inputs, official=args.official is not False,
            graphs=args.graphs, remeasure_peaks=args.remeasure_peaks)
        model_bench.run(opt, args.json)
    except InputError as exc:
        print(f"tilewave bench: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_build(args) -> int:
    from tilewave.harness.build import default_jobs, run_build

    emit = tuple(e for e in args.emit.split(",") if e) if args.emit else ()
    if args.jobs is not None and args.jobs < 1:
        print(f"error: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    try:
        results = run_build(_kernel_registry(), args.filter, args.target, args.out, emit,
                            jobs=args.jobs or default_jobs())
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0 if all(r.passed for r in results) else 1


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `command` (with test, bench and build, which are cheap), or of every command for None or a
    name that is not one."""
    from tilewave import __version__
    from tilewave.precision import DEFAULT as DEFAULT_PRECISION, MODES as PRECISIONS

    p = argparse.ArgumentParser(prog="tilewave", description=__doc__)
    p.add_argument("--version", action="version", version=f"tilewave {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("test", help="check every kernel against its float64 oracle")
    t.add_argument("-f", "--filter", help="kernel name or family (glob or substring)")
    t.add_argument("--device", choices=["cpu", "cuda"], help="cpu = Triton interpreter (default: cuda if present)")
    t.add_argument("--seed", type=int, help="base seed (default: random, printed; or TILEWAVE_SEED)")
    t.set_defaults(run=cmd_test)

    b = sub.add_parser("bench", help="time kernels at model shapes beside their PyTorch peers (GPU), or with "
                                      "--model a model end to end beside its official implementation (GPU or CPU)")
    b.add_argument("-f", "--filter", help="kernel name or family (glob or substring)")
    b.add_argument("--dtype", action="append", choices=["float32", "float16", "bfloat16"],
                   help="kernels: the dtypes to time (repeatable); --model: the model's one storage dtype, "
                        "float32 (default) or bfloat16 (bigvgan, decoder)")
    b.add_argument("-v", "--verbose", action="store_true", help="also GB/s, GFLOP/s, intensity, error vs peer")
    b.add_argument("--json", metavar="FILE", help="write the results as JSON")
    b.add_argument("--remeasure-peaks", action="store_true", help="measure copy and matmul peaks again")
    m = b.add_argument_group("model benches (tilewave.harness.model_bench)")
    m.add_argument("--model", choices=["kokoro", "bigvgan", "decoder"],
                   help="end to end: ms, x real time, peak memory, fraction of the compute floor, the official "
                        "implementation's time and parity, from one run")
    m.add_argument("--batch", metavar="B[,B...]",
                   help="kokoro: B mixed-length sentences one by one, through the engine, padded, and the official "
                        "model one by one (several: 1,8,64)")
    m.add_argument("--graphs", action="store_true",
                   help="kokoro --batch on a GPU: the engine's batches replay CUDA graphs (the session's BatchPolicy)")
    m.add_argument("--precision", choices=PRECISIONS,
                   help=f"float32 products on a GPU (default {DEFAULT_PRECISION}; no effect on a CPU)")
    m.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda if present")
    m.add_argument("--reps", type=int, metavar="N", help="timed runs (default 5 on a GPU, 3 on a CPU; --batch: 3, 1)")
    m.add_argument("--seconds", type=float, metavar="S",
                   help="bigvgan, decoder: seconds of audio (default 10 and 2.48)")
    m.add_argument("--inputs", metavar="FILE", help="kokoro: a JSON of name -> phonemes (default: the packaged "
                                                      "short, medium and long inputs)")
    m.add_argument("--official", action=argparse.BooleanOptionalAction, default=None,
                   help="time the official implementation too (default: yes; it is optional, and said so if absent)")
    b.set_defaults(run=cmd_bench)

    c = sub.add_parser("build", help="compile every kernel variant for a GPU target, without a GPU")
    c.add_argument("-f", "--filter", help="kernel name or family (glob or substring)")
    c.add_argument("--target", default="sm_90", help="GPU architecture (default sm_90, the H100/H200)")
    c.add_argument("--emit", default="", help="comma-separated artifacts to write: ptx,cubin,ttgir,llir")
    c.add_argument("--out", help="directory for emitted artifacts")
    c.add_argument("-j", "--jobs", type=int, metavar="N", help="compile in N processes (default: every CPU)")
    c.set_defaults(run=cmd_build)

    for name, target in COMMANDS.items():
        if command in (None, name) or command not in COMMANDS:
            module, function = target.split(":")
            getattr(importlib.import_module(module), function)(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _use_interpreter_for(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    return args.run(args)


# Commands that leave nothing behind when they return (files written and closed, sessions closed): the process
# ends there, without the interpreter's teardown of torch's modules, which took 0.7 s of a 4.3 s `tilewave say`
# on a 2-core CPU (benchmarks/RESULTS.md, "CPU: start-up of tilewave say"); the OS frees the memory as fast either way.
_EXIT_AT_ONCE = ("say",)


def entry() -> None:
    """The `tilewave` executable: main(), then the process's exit."""
    argv = sys.argv[1:]
    code = main(argv)
    if argv and argv[0] in _EXIT_AT_ONCE:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
