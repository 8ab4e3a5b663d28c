"""`tilewave vocode`: turn a mel spectrogram (.npy) or a waveform (copy-synthesis) into audio with BigVGAN.

A thin shell over tilewave.engine.vocode. Mistakes end in one line on stderr and a non-zero exit (2: the
input or options, 1: weights, model or file system); a WAV is written only once all of its audio exists.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from tilewave.cli.common import add_device_arg, add_precision_arg
from tilewave.engine.wav import audio_format, write_audio
from tilewave.errors import InputError, TilewaveError


def add_parser(subparsers) -> None:
    from tilewave.engine import DTYPES
    from tilewave.engine.vocode import CHECKPOINT_HELP, DEFAULT_CHUNK_FRAMES

    p = subparsers.add_parser(
        "vocode", help="mel spectrogram (.npy) or WAV (copy-synthesis) -> WAV with BigVGAN",
        description="Vocode log-mel spectrograms (.npy, [num_mels, frames] or [batch, num_mels, frames]) or "
                    "re-synthesise WAV files (wav -> mel -> BigVGAN) with an official BigVGAN checkpoint. "
                    + CHECKPOINT_HELP + ".")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="a .wav/.flac file or a mel .npy (several allowed)")
    p.add_argument("-o", "--output", required=True, metavar="FILE|DIR",
                   help="the file to write (.wav, .flac, .ogg or .mp3); a folder when there are several inputs or a "
                        "batched mel (WAV files in it)")
    p.add_argument("--checkpoint", metavar="DIR", help="folder with config.json and bigvgan_generator.pt")
    add_device_arg(p)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float32",
                   help="storage dtype of the vocoder's weights and activations (default float32)")
    add_precision_arg(p)
    p.add_argument("--chunk-frames", type=int, default=DEFAULT_CHUNK_FRAMES, metavar="N",
                   help=f"mel frames per chunk; bounds memory on long inputs (default {DEFAULT_CHUNK_FRAMES})")
    p.add_argument("--profile", action="store_true", help="print the time per stage and op type, and where ops ran")
    p.set_defaults(run=run)


def _outputs(args, batch_sizes: list[int]) -> list[list[Path]]:
    """One output path per audio: the file itself, or <dir>/<input stem>[_<i>].wav when there are several."""
    out = Path(args.output)
    if len(args.inputs) == 1 and batch_sizes[0] == 1 and not out.is_dir():
        if not out.parent.is_dir():
            raise InputError(f"cannot write {str(out)!r}: the folder {str(out.parent)!r} does not exist")
        audio_format(out)
        return [[out]]
    if not out.is_dir():
        raise InputError(f"{len(args.inputs)} inputs ({sum(batch_sizes)} audios) need an existing output folder, "
                         f"and {str(out)!r} is not one; create it or pass a folder")
    return [[out / (f"{Path(i).stem}.wav" if n == 1 else f"{Path(i).stem}_{b}.wav") for b in range(n)]
            for i, n in zip(args.inputs, batch_sizes)]


def run(args) -> int:
    from tilewave.engine.process import configure_process
    from tilewave.engine.vocode import Vocoder

    try:
        out = Path(args.output)
        if out.suffix and not out.is_dir():  # an output file: its folder and format are checked before any work
            if not out.parent.is_dir():
                raise InputError(f"cannot write {str(out)!r}: the folder {str(out.parent)!r} does not exist")
            audio_format(out)
        configure_process(args.device)
        vocoder = Vocoder(args.checkpoint, args.device, args.precision, args.dtype, args.profile)
        start = time.perf_counter()
        audios = vocoder.vocode_files(args.inputs, args.chunk_frames)
        elapsed = time.perf_counter() - start
        paths = _outputs(args, [a.shape[0] for a in audios])
        for audio, files in zip(audios, paths):
            for row, file in zip(audio.numpy(), files):
                write_audio(file, row, vocoder.sampling_rate)
        seconds = sum(a.shape[0] * a.shape[1] for a in audios) / vocoder.sampling_rate
        print(f"wrote {sum(len(f) for f in paths)} file(s), {seconds:.2f} s of audio in {elapsed:.2f} s "
              f"({seconds / max(elapsed, 1e-9):.1f}x real time) on {vocoder.device}", file=sys.stderr)
        if vocoder.profiler is not None:
            print(vocoder.profiler.format("stage / op"))
            for op, where, why, n in vocoder.placements():
                print(f"{op:>20} {where:>7} x{n} {why}")
        return 0
    except InputError as exc:
        print(f"tilewave vocode: {exc}", file=sys.stderr)
        return 2
    except (TilewaveError, OSError) as exc:
        print(f"tilewave vocode: {exc}", file=sys.stderr)
        return 1
