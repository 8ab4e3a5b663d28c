"""`tilewave say`: speak English text (or Kokoro phonemes) into a 24 kHz audio file (WAV, FLAC, Ogg or MP3).

A thin shell over tilewave.engine: it reads the text, makes a session, streams the chunks into the file
as they are made. Every mistake a user can make ends in one line on stderr and a non-zero exit (2: the
input, 1: weights, model or file system); the audio goes to a temporary file renamed once the last
chunk is in, so a failed run leaves no file behind.

With --server URL or $TILEWAVE_SERVER (a loopback address) and a server answering there, the speech comes from
that `tilewave serve` instead (say_server.py): no torch in this process. An option the HTTP API cannot honour
(--profile, --timestamps, --phonemes, a voice file, the session's device, threads, weights, precision, a dtype
named, memory budget) runs in process as without a server, after a one-line note, because the user asked for
something only this process can give; a configured server that does not answer gets the same note.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time

from tilewave.cli.common import add_kokoro_args
from tilewave.cli.say_server import SERVER_ENV, ServerError, configured_server, healthy, speech
from tilewave.errors import InputError, TilewaveError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("say", help="speak text into an audio file (Kokoro-82M, 24 kHz)",
                              description="Speak text (English, or the language --lang names) into a 24 kHz audio "
                                          "file (WAV, FLAC, Ogg or MP3, by its name) with Kokoro-82M.")
    p.add_argument("-o", "--output", default="out.wav", metavar="FILE",
                   help="the file to write, .wav, .flac, .ogg or .mp3 (default out.wav)")
    p.add_argument("--profile", action="store_true", help="print the time per model stage and where each op ran")
    p.add_argument("--timestamps", metavar="FILE", help="also write each word's start and end: .srt, .vtt or .json")
    p.add_argument("--server", metavar="URL",
                   help=f"have the `tilewave serve` at URL (loopback only, e.g. http://127.0.0.1:8000) make the "
                        f"speech, when it answers (default: ${SERVER_ENV}; unset: always in this process)")
    p.add_argument("--no-server", action="store_true", help=f"run in this process even when ${SERVER_ENV} is set")
    _add_synthesis_args(p)


def add_profile_parser(subparsers) -> None:
    p = subparsers.add_parser("profile", help="time Kokoro-82M stage by stage on TEXT (no file written)",
                              description="Synthesise TEXT and print the time per model stage (ALBERT, duration, "
                                          "F0/energy, text encoder, decoder, generator, iSTFT) with each share, "
                                          "and which ops ran on Triton kernels and which on PyTorch, and why.")
    p.set_defaults(profile=True, output=None, timestamps=None, server=None, no_server=True)
    _add_synthesis_args(p)


def _add_synthesis_args(p) -> None:
    p.add_argument("text", nargs="?", metavar="TEXT", help='the words to say; "-" reads them from stdin')
    p.add_argument("--file", metavar="PATH", help="read the text from a UTF-8 file instead")
    p.add_argument("--voice", metavar="NAME|PATH|BLEND",
                   help="a stock voice (`tilewave voices`; default: the language's, af_heart for en-us), an OpenAI "
                        "name, a .npz/.pt/.bin pack, or a blend 'a:0.7,b:0.3' / 'a(2)+b(1)'; it reads the text "
                        "in its own language (ef_dora: Spanish) unless --lang names another")
    p.add_argument("--speed", type=float, default=1.0, help="0.5 (slow) to 2.0 (fast), default 1.0")
    p.add_argument("--seed", type=int, help="seed of the voice source's random phase and noise (repeatable audio)")
    p.add_argument("--phonemes", action="store_true", help="TEXT is Kokoro phonemes, not words")
    p.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="give the phonemizer the text as written (no reading of numbers, money, dates, abbreviations "
                        "or Markdown)")
    p.add_argument("--threads", type=int, metavar="N",
                   help="CPU threads for the model (default: PyTorch's, one per core, or $OMP_NUM_THREADS)")
    add_kokoro_args(p)
    p.set_defaults(run=run)


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


def _dtype_name(session) -> str:
    """The dtype the session runs in (what --dtype auto chose)."""
    return str(session.dtype).removeprefix("torch.")


def _print_profile(session) -> None:
    if session.device.type == "cuda":
        print("(after one untimed warm-up pass, so that Triton's compilation is not counted)")
    print(f"dtype: {_dtype_name(session)}, precision: {session.precision}")
    print(session.profiler.format("stage"))
    rows = session.placements()
    print(f"\n{'op':<28} {'ran on':<7} {'calls':>6}  why not triton")
    for op, where, why, calls in rows:
        print(f"{op:<28} {where:<7} {calls:>6}  {why}")
    if not rows:
        print("(no op went through tilewave.ops)")
    peak, batches = session.peak_memory(), session.batches()
    what = "CUDA allocator" if session.device.type == "cuda" else "resident set"
    budget = f", budget {session.memory_budget / 1e6:.0f} MB" if session.memory_budget is not None else ""
    shown = "not measurable here" if peak is None else f"{peak / 1e6:.1f} MB ({what}, above the loaded model)"
    print(f"\npeak memory: {shown}{budget}; {len(batches)} batch(es) of {', '.join(str(b.size) for b in batches)} "
          f"chunk(s), at most {session.frame_budget} padded frames each")


@contextlib.contextmanager
def _progress(total: int, console=None):
    """A chunk counter on the terminal's stderr while a text of several chunks is spoken (nothing when stderr is
    not a terminal, or for one chunk); yields the function that counts a chunk done."""
    if total < 2:  # before rich's import: 55 ms of a one-sentence `say`
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield lambda: None
        return
    with Progress(TextColumn("speaking"), BarColumn(), MofNCompleteColumn(), TextColumn("chunks"),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("speaking", total=total)
        yield lambda: bar.advance(task)


def _session(args):
    from tilewave.engine import Session
    from tilewave.engine.process import configure_process

    configure_process(args.device, args.memory_budget, threads=args.threads)
    return Session(device=args.device, precision=args.precision, dtype=args.dtype, lang=args.lang, voice=args.voice,
                   weights=args.weights, memory_budget=args.memory_budget, profile=args.profile,
                   normalize=args.normalize)


def _joined(request, chunks: list):
    """The request's audio as joined blocks, each as soon as it is final; the chunks made go into `chunks`."""
    from tilewave.engine import Joiner

    joiner = Joiner()
    with _progress(len(request)) as advance:
        for chunk in request:
            chunks.append(chunk)
            yield joiner.push(chunk.audio)
            advance()
    yield joiner.finish()


def run(args) -> int:
    start = time.perf_counter()
    from tilewave.engine.voice_catalog import request_language
    from tilewave.text.ahead import Ahead, phonemize_ahead

    try:
        text = _read_text(args)
        args.lang = request_language(args.lang, args.voice)  # the session's language too
        url = configured_server(args.server, args.no_server)
        if url is not None:
            if args.output is not None:
                _check_output(args.output)
            local = _needs_this_process(args)
            if local is None and healthy(url):
                return _run_on_server(args, text, url, start)
            print(f"note: {local or f'no server answers at {url}'}; speaking in this process", file=sys.stderr)
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    # the text's phonemes in a second process while this one imports torch (tilewave.text.ahead)
    ahead = Ahead(None, None) if args.phonemes else phonemize_ahead(text, args.lang, args.normalize)
    with ahead:
        return _run(args, text, ahead, start)


def _needs_this_process(args) -> str | None:
    """Why the server cannot make what `args` ask for (the first option it cannot honour), or None."""
    from tilewave.precision import AUTO, DEFAULT as DEFAULT_PRECISION

    asked = {"--profile": args.profile, "--timestamps": args.timestamps is not None, "--phonemes": args.phonemes,
             "--device": args.device is not None, "--threads": args.threads is not None,
             "--weights": args.weights is not None, "--precision": args.precision != DEFAULT_PRECISION,
             "--dtype": args.dtype != AUTO, "--memory-budget": args.memory_budget is not None,
             # the server opens no file a request names
             "a voice file": args.voice is not None and args.voice.lower().endswith((".npz", ".pt", ".bin")),
             # out of range: this process says so in Kokoro's terms, not the server's OpenAI scale
             "--speed outside 0.5-2.0": not 0.5 <= args.speed <= 2.0}
    named = [what for what, given in asked.items() if given]
    return f"the server cannot honour {named[0]}" if named else None


def _run_on_server(args, text: str, url: str, start: float) -> int:
    import io

    import soundfile

    from tilewave.engine.wav import write_audio_stream

    # OpenAI's speed scale is Kokoro's squared (server/schemas.kokoro_speed), so the voice keeps this pace
    fields = {"model": "kokoro", "input": text, "speed": args.speed ** 2, "response_format": "wav",
              "lang_code": args.lang, "normalization_options": {"normalize": args.normalize}}
    if args.voice is not None:
        fields["voice"] = args.voice
    if args.seed is not None:
        fields["seed"] = args.seed
    asked = time.perf_counter()
    try:
        data = speech(url, fields)
        made_s = time.perf_counter() - asked
        # decoded and written again: the streamed WAV's header has no length, and the file name picks the format
        audio, rate = soundfile.read(io.BytesIO(data), dtype="float32")
        samples = write_audio_stream(args.output, [audio], rate)
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if exc.status is not None and 400 <= exc.status < 500 else 1  # 4xx: what was asked
    except soundfile.LibsndfileError as exc:
        print(f"error: the server at {url} sent audio that does not decode as WAV: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot write {exc.filename or args.output!r}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    seconds = samples / rate
    print(f"wrote {args.output}: {seconds:.2f} s of speech from the server at {url}; made and sent in {made_s:.2f} s "
          f"(real-time factor {made_s / max(seconds, 1e-9):.2f}) after {asked - start:.2f} s here")
    return 0


def _run(args, text: str, ahead, start: float) -> int:
    from tilewave.engine import SAMPLE_RATE, Session  # noqa: F401 (imported here to time it: torch, espeak, the model code)
    from tilewave.engine.wav import write_audio_stream

    chunks: list = []
    try:
        if args.output is not None:
            _check_output(args.output)
        if args.timestamps is not None:
            from tilewave.engine.timestamps import check_timestamps_path

            check_timestamps_path(args.timestamps)
        imported = time.perf_counter()
        given = ahead.result()  # the child's chunks, made while torch imported; a text's InputError before any load
        phonemized = time.perf_counter()
        with _session(args) as session:
            session.load()
            loaded = time.perf_counter()
            if session.profiler is not None and session.device.type == "cuda":
                # Triton compiles each kernel at its first call: a warm-up pass keeps compilation out of the profile.
                session.warm_up(text, speed=args.speed, seed=args.seed, phonemes=args.phonemes)
            session.reset_placements()
            warmed = time.perf_counter()
            # checks the text and phonemizes it; the worker starts on its chunks at once
            request = session.submit(text, speed=args.speed, seed=args.seed, phonemes=args.phonemes,
                                     chunks=given)
            ready = time.perf_counter()
            blocks = _joined(request, chunks)
            if args.output is not None:
                samples = write_audio_stream(args.output, blocks, SAMPLE_RATE)
            else:
                samples = sum(b.size for b in blocks)
            synth_s = time.perf_counter() - ready
        setup = {"imports": imported - start, "model loading": loaded - phonemized, "warm-up": warmed - loaded,
                 "phonemizing": phonemized - imported + ready - warmed}
        if args.timestamps is not None:
            from tilewave.engine.timestamps import word_timestamps, write_timestamps

            write_timestamps(args.timestamps, word_timestamps(chunks))
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    except OSError as exc:
        print(f"error: cannot write {exc.filename or args.output!r}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    seconds = samples / SAMPLE_RATE
    if not (session.profiler is not None and session.device.type == "cuda"):
        del setup["warm-up"]
    n_phonemes = sum(len(c.phonemes) for c in chunks)
    made = f"wrote {args.output}" if args.output is not None else "synthesised"
    print(f"{made}: {seconds:.2f} s of speech, {len(chunks)} chunk(s), {n_phonemes} phonemes; "
          f"made in {synth_s:.2f} s on {session.device} in {_dtype_name(session)} "
          f"(real-time factor {synth_s / max(seconds, 1e-9):.2f}) "
          f"after {', '.join(f'{s:.2f} s of {what}' for what, s in setup.items())}")
    if session.profiler is not None:
        _print_profile(session)
    return 0
