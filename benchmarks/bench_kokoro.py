"""Kokoro-82M end to end on one GPU, same weights, same inputs, same run:

  tilewave on its Triton kernels (float32 products exact, and with --precisions also tf32x3: float32-class
  error on tensor cores), tilewave on PyTorch ops (`backend("torch")`), and the official `kokoro`
  0.9.4 KModel (eager fp32, TF32 off), each timed with device events (median after warm-up), plus
  tilewave's per-stage profile and its parity with the official model (durations, audio).

The inputs are English sentences phonemized on a machine with espeak (`--make-inputs FILE`), so that the
GPU machine needs no phonemizer:  python3 benchmarks/bench_kokoro.py --inputs benchmarks/kokoro_inputs.json
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

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


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    n = min(a.numel(), b.numel())
    a, b = a.flatten()[:n].double(), b.flatten()[:n].double()
    return ((a - b).norm() / b.norm()).item()


def run(inputs_path: str, reps: int, out_json: str | None, precisions: list[str]) -> None:
    import triton

    from tests.models.kokoro_reference import official_kmodel
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.harness.timing import StageProfiler, time_cuda
    from tilewave.models.kokoro import KokoroModel
    from tilewave.models.kokoro import weights as W
    from tilewave.ops import backend, placements, reset_placements
    from tilewave.precision import scope as fp32_matmul_precision
    from tilewave.text.vocab import encode

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    weights = W.load_weights(None, KokoroModel.expected_shapes())
    ours = KokoroModel.from_weights(weights, dev)
    pth = W.save_official_layout(weights, Path(tempfile.mkdtemp()) / "kokoro-dequantized.pth")
    official = official_kmodel(pth, dev)
    pack = load_voice("jf_alpha")
    phonemes = json.loads(Path(inputs_path).read_text())
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "rows": []}
    print(f"# {report['gpu']}  torch {torch.__version__}  triton {triton.__version__}")
    for name, ps in phonemes.items():
        ids = encode(ps).to(dev)
        ref_s = style_for(pack, len(ps)).to(dev)

        def tilewave_triton(seed=0):
            return ours(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(seed))

        def tilewave_torch(seed=0):
            with backend("torch"):
                return ours(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(seed))

        def official_fn(seed=0):
            torch.manual_seed(seed)
            with torch.no_grad():
                return official.forward_with_tokens(ids, ref_s, 1.0)

        a_tri, a_tt, (a_off, d_off) = tilewave_triton(), tilewave_torch(), official_fn()
        row = {"input": name, "phonemes": len(ps), "audio_s": a_off.numel() / 24000,
               "durations_equal_triton": bool(torch.equal(a_tri.durations.cpu(), d_off.cpu())),
               "durations_equal_torch": bool(torch.equal(a_tt.durations.cpu(), d_off.cpu())),
               "audio_rel_l2_triton": rel_l2(a_tri.audio, a_off), "audio_rel_l2_torch": rel_l2(a_tt.audio, a_off),
               "finite": bool(torch.isfinite(a_tri.audio).all())}
        for label, fn in (("ms_tilewave_triton", tilewave_triton), ("ms_tilewave_torch", tilewave_torch),
                          ("ms_official", official_fn)):
            row[label] = time_cuda(fn, warmup=2, reps=reps, flush_l2=False).median_us / 1e3
        for precision in precisions:  # the same Triton path with float32 products on tensor cores
            with fp32_matmul_precision(precision):
                a_p = tilewave_triton()
                row[f"ms_tilewave_triton_{precision}"] = time_cuda(tilewave_triton, warmup=2, reps=reps,
                                                                   flush_l2=False).median_us / 1e3
            row[f"durations_equal_triton_{precision}"] = bool(torch.equal(a_p.durations.cpu(), d_off.cpu()))
            row[f"audio_rel_l2_triton_{precision}"] = rel_l2(a_p.audio, a_off)
            print(f"        precision {precision}: {row[f'ms_tilewave_triton_{precision}']:.1f} ms, durations equal "
                  f"{row[f'durations_equal_triton_{precision}']}, audio rel L2 {row[f'audio_rel_l2_triton_{precision}']:.2e}")
        prof = StageProfiler(dev)
        reset_placements()
        ours(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(0), profile=prof)
        row["stages_ms"] = {n: round(ms, 2) for n, _, ms, _ in prof.report()}
        row["placements"] = placements()
        report["rows"].append(row)
        print(f"{name:>6}: {len(ps)} phonemes -> {row['audio_s']:.2f} s | tilewave/triton {row['ms_tilewave_triton']:.1f} ms"
              f" | tilewave/torch {row['ms_tilewave_torch']:.1f} ms | official {row['ms_official']:.1f} ms"
              f" | x{row['ms_official'] / row['ms_tilewave_triton']:.2f} vs official"
              f" | durations equal {row['durations_equal_triton']}/{row['durations_equal_torch']}"
              f" | audio rel L2 {row['audio_rel_l2_triton']:.2e}/{row['audio_rel_l2_torch']:.2e}")
        print(prof.format("  stage"))
        fallbacks = [p for p in row["placements"] if p[1] == "torch"]
        print("  ops on PyTorch:", ", ".join(f"{op} ({why})" for op, _, why, _ in fallbacks) or "none")
    if out_json:
        Path(out_json).write_text(json.dumps(report, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--make-inputs", metavar="FILE", help="phonemize the benchmark texts into FILE (needs espeak)")
    p.add_argument("--inputs", default=str(ROOT / "benchmarks" / "kokoro_inputs.json"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--precisions", default="tf32x3", help="comma-separated extra float32 precisions to time (or '')")
    args = p.parse_args()
    if args.make_inputs:
        make_inputs(args.make_inputs)
    else:
        run(args.inputs, args.reps, args.json, [x for x in args.precisions.split(",") if x])


if __name__ == "__main__":
    main()
