"""Kokoro-82M end to end: the command lines that benchmarks/gpu_session.sh and RESULTS.md cite, over
tilewave.harness.model_bench (`tilewave bench --model kokoro`, which documents the rows), and --make-inputs.

  python3 benchmarks/bench_kokoro.py [--json F]      single utterances (GPU if present): tilewave at 'ieee' and at
                                                     each of --precisions (default tf32x3), on its PyTorch ops
                                                     (GPU), and the official KModel
  python3 benchmarks/bench_kokoro.py --batch 1,8,32,64 --device cuda --precision tf32x3 --json F
                                                     B mixed sentences one by one, through the engine, padded, and
                                                     the official model one by one (default device: the CPU)
  python3 benchmarks/bench_kokoro.py --make-inputs tilewave/harness/kokoro_inputs.json
                                                     phonemize TEXTS (needs espeak): the packaged inputs
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEXTS = {
    "short": "The quick brown fox jumps over the lazy dog, and then it runs back home.",
    "medium": ("Speech synthesis has come a long way. Early systems stitched together recorded fragments of "
               "speech, and they sounded choppy and robotic. Modern neural models predict how long each sound "
               "lasts, how the pitch rises and falls, and finally the waveform itself, one sample at a time or "
               "all at once. The result can be hard to tell apart from a human voice, even over a long passage."),
    "long": ("It was a bright cold day in April, and the clocks were striking thirteen. The hallway smelt of "
             "boiled cabbage and old rag mats. At one end of it a coloured poster, too large for indoor display, "
             "had been tacked to the wall. It depicted simply an enormous face, more than a metre wide: the face "
             "of a man of about forty-five, with a heavy black moustache and ruggedly handsome features. Winston "
             "made for the stairs. It was no use trying the lift. Even at the best of times it was seldom working, "
             "and at present the electric current was cut off during daylight hours. It was part of the economy "
             "drive in preparation for Hate Week. The flat was seven flights up, and Winston, who was thirty-nine "
             "and had a varicose ulcer above his right ankle, went slowly, resting several times on the way."),
}


def make_inputs(path: str) -> None:
    from tilewave.text.espeak import EspeakPhonemizer
    from tilewave.text.vocab import MAX_PHONEMES

    ph = EspeakPhonemizer("en-us")
    out = {name: ph([text])[0][:MAX_PHONEMES] for name, text in TEXTS.items()}
    Path(path).write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print({k: len(v) for k, v in out.items()})


def main() -> None:
    import torch

    from tilewave.harness import model_bench
    from tilewave.precision import DEFAULT

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--make-inputs", metavar="FILE", help="phonemize the benchmark texts into FILE (needs espeak)")
    p.add_argument("--inputs", help=f"phonemes JSON (default {model_bench.INPUTS.relative_to(ROOT)})")
    p.add_argument("--reps", type=int, help="timed runs (default 5 on a GPU; --batch: rounds, 3 on a GPU, 1 on the CPU)")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--precisions", default="tf32x3", help="comma-separated float32 precisions to time beside ieee (or '')")
    p.add_argument("--batch", metavar="B[,B...]", help="B mixed-length sentences batched vs one by one (several: 1,8,64)")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda if present; --batch: cpu")
    p.add_argument("--precision", default=None, help="float32 products for --batch (default: the engine's)")
    p.add_argument("--official", action=argparse.BooleanOptionalAction, default=None,
                   help="--batch: the official KModel one by one too (default: on a GPU)")
    args = p.parse_args()
    if args.make_inputs:
        return make_inputs(args.make_inputs)
    if args.batch:
        device = args.device or "cpu"
        opt = model_bench.Options("kokoro", device, (args.precision or DEFAULT,),
                                  batches=model_bench.parse_batches(args.batch), reps=args.reps, inputs=args.inputs,
                                  official=device == "cuda" if args.official is None else args.official)
    else:
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        extra = tuple(x for x in args.precisions.split(",") if x and x != "ieee")
        opt = model_bench.Options("kokoro", device, ("ieee",) + extra, reps=args.reps, inputs=args.inputs,
                                  official=args.official is not False)
    model_bench.run(opt, args.json)


if __name__ == "__main__":
    main()
