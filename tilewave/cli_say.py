"""`tilewave say`: speak English text (or Kokoro phonemes) into a 24 kHz audio file (WAV, FLAC, Ogg or MP3).

A thin shell over tilewave.engine: it reads the text, calls the pipeline, writes the file. Every
mistake a user can make ends in one line on stderr and a non-zero exit (2: the input, 1: weights,
model or file system), and the WAV is written only once all of the audio exists, so a failed run
leaves no file behind.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time

from tilewave.engine.voices import DEFAULT_VOICE
from tilewave.errors import InputError, TilewaveError
from tilewave.text.espeak import LANGUAGES


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("say", help="speak text into an audio file (Kokoro-82M, 24 kHz)",
                              description="Speak English text into a 24 kHz audio file (WAV, FLAC, Ogg or MP3, "
                                          "by its name) with Kokoro-82M.")
    p.add_argument("-o", "--output", default="out.wav", metavar="FILE",
                   help="the file to write, .wav, .flac, .ogg or .mp3 (default out.wav)")
    p.add_argument("--profile", action="store_true", help="print the time per model stage and where each op ran")
    _add_synthesis_args(p)


def add_profile_parser(subparsers) -> None:
    p = subparsers.add_parser("profile", help="time Kokoro-82M stage by stage on TEXT (no file written)",
                              description="Synthesise TEXT and print the time per model stage (ALBERT, duration, "
                                          "F0/energy, text encoder, decoder, generator, iSTFT) with each share, "
                                          "and which ops ran on Triton kernels and which on PyTorch, and why.")
    p.set_defaults(profile=True, output=None)
    _add_synthesis_args(p)


def _add_synthesis_args(p) -> None:
    p.add_argument("text", nargs="?", metavar="TEXT", help='the words to say; "-" reads them from stdin')
    p.add_argument("--file", metavar="PATH", help="read the text from a UTF-8 file instead")
    p.add_argument("--voice", default=DEFAULT_VOICE, metavar="NAME|PATH|BLEND",
                   help=f"a shipped voice (default {DEFAULT_VOICE}), a .npz/.pt pack, or a blend 'a:0.7,b:0.3'")
    p.add_argument("--speed", type=float, default=1.0, help="0.5 (slow) to 2.0 (fast), default 1.0")
    p.add_argument("--lang", default="en-us", choices=LANGUAGES, help="English accent of the phonemizer")
    p.add_argument("--device", choices=["cpu", "cuda"], help="where the model runs (default: cuda if present)")
    p.add_argument("--seed", type=int, help="seed of the voice source's random phase and noise (repeatable audio)")
    p.add_argument("--weights", metavar="PATH", help="Kokoro weights (.onnx or .pth; default: the installed int8 ONNX)")
    p.add_argument("--phonemes", action="store_true", help="TEXT is Kokoro phonemes, not English")
    add_precision_arg(p)
    p.set_defaults(run=run)


def add_precision_arg(p) -> None:
    from tilewave.engine.pipeline import DEFAULT_PRECISION
    from tilewave.precision import MODES as PRECISIONS

    p.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION,
                   help="float32 products on a GPU: tf32x3 (default: float32-class error on tensor cores), ieee "
                        "(exact float32 on the FMA units, slower), tf32 (~1e-3 relative, fastest); no effect on a CPU")


def _read_text(args) -> str:
    if args.file is not None and args.text is not None:
        raise InputError(f"give the text either as TEXT ({args.text[:30]!r}) or with --file ({args.file}), not both")
    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the text file {args.file!r}: {exc}") from None
    if args.text is None:
        raise InputError('no text given; write `tilewave say "Hello there." -o hello.wav`, or use "-" or --file')
    return sys.stdin.read() if args.text == "-" else args.text


def _check_output(path: str) -> None:
    from tilewave.engine.wav import audio_format

    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"cannot write {path!r}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise InputError(f"cannot write {path!r}: it is a folder; give a file name like {os.path.join(path, 'out.wav')}")
    audio_format(path)


def _print_profile(profiler, device) -> None:
    from tilewave.ops import placements

    if device.type == "cuda":
        print("(after one untimed warm-up pass, so that Triton's compilation is not counted)")
    print(profiler.format("stage"))
    rows = placements()
    print(f"\n{'op':<28} {'ran on':<7} {'calls':>6}  why not triton")
    for op, where, why, calls in rows:
        print(f"{op:<28} {where:<7} {calls:>6}  {why}")
    if not rows:
        print("(no op went through tilewave.ops)")


@contextlib.contextmanager
def _progress(total: int, console=None):
    """A chunk counter on the terminal's stderr while a text of several chunks is spoken (nothing when stderr is
    not a terminal, or for one chunk); yields the function that counts a chunk done."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = console or Console(stderr=True)
    if total < 2 or not console.is_terminal:
        yield lambda: None
        return
    with Progress(TextColumn("speaking"), BarColumn(), MofNCompleteColumn(), TextColumn("chunks"),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("speaking", total=total)
        yield lambda: bar.advance(task)


def _synthesize(args):
    from tilewave.engine.pipeline import Pipeline, check_speed, join_chunks, resolve_device

    text = _read_text(args)
    check_speed(args.speed)
    if args.output is not None:
        _check_output(args.output)
    device = resolve_device(args.device)
    profiler = None
    if args.profile:
        from tilewave.harness.timing import StageProfiler

        profiler = StageProfiler(device)
    start = time.perf_counter()
    pipeline = Pipeline(lang=args.lang, voice=args.voice, device=device, weights=args.weights,
                        precision=args.precision)
    # Calling the pipeline checks the text and loads the model; iterating it makes the audio.
    pending = pipeline(text, speed=args.speed, seed=args.seed, phonemes=args.phonemes, profile=profiler)
    if profiler is not None:
        from tilewave.ops import reset_placements

        if device.type == "cuda":
            # Triton compiles each kernel at its first call: a warm-up pass keeps compilation out of the profile.
            list(pipeline(text, speed=args.speed, seed=args.seed, phonemes=args.phonemes))
        reset_placements()
    ready = time.perf_counter()
    chunks = []
    with _progress(len(pending)) as advance:
        for chunk in pending:
            chunks.append(chunk)
            advance()
    timing = (ready - start, time.perf_counter() - ready)
    return join_chunks([c.audio for c in chunks]), chunks, device, profiler, timing


def run(args) -> int:
    from tilewave.engine.pipeline import SAMPLE_RATE
    from tilewave.engine.wav import write_audio

    try:
        audio, chunks, device, profiler, (setup_s, synth_s) = _synthesize(args)
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    if args.output is not None:
        try:
            write_audio(args.output, audio, SAMPLE_RATE)
        except OSError as exc:
            print(f"error: cannot write {args.output!r}: {exc}", file=sys.stderr)
            return 1
    seconds = audio.size / SAMPLE_RATE
    warm_up = " and warm-up" if profiler is not None and device.type == "cuda" else ""
    n_phonemes = sum(len(c.phonemes) for c in chunks)
    made = f"wrote {args.output}" if args.output is not None else "synthesised"
    print(f"{made}: {seconds:.2f} s of speech, {len(chunks)} chunk(s), {n_phonemes} phonemes; "
          f"made in {synth_s:.2f} s on {device} (real-time factor {synth_s / max(seconds, 1e-9):.2f}) "
          f"after {setup_s:.2f} s of phonemizing, model loading{warm_up}")
    if profiler is not None:
        _print_profile(profiler, device)
    return 0
