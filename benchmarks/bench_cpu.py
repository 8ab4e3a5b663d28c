"""Kokoro on the CPU beside onnxruntime and the official model: one process, interleaved rounds, medians.

    python benchmarks/bench_cpu.py [--rounds 5] [--threads N] [--json F] [--only short,medium,long] [--bf16]

Three sentences of our own (cpu_inputs.json: ~50, ~350 and ~500 tokens, phonemized once with espeak en-us, so
every runtime gets the same phonemes), voice jf_alpha's row for the length, speed 1:
  tilewave       KokoroModel.forward in the default mode (float32, exact), the real weights dequantized
  onnxruntime    the shipped int8 ONNX (kokoro-v1.0.int8.onnx, what kokoro-onnx runs) on the CPU provider
  official       kokoro 0.9.4's KModel on the same float32 weights
  tilewave bf16  (--bf16) the same model with its decoder and generator in bfloat16 (Session(dtype="bfloat16"))
Each round runs every runtime once per sentence, the runtimes' order reversed every other round (ABC CBA), so
that a machine whose speed drifts slows all alike. A first untimed round warms every one. Parity: tilewave's
durations against the official model's (exactly); the ONNX gives no durations, so its audio's length is shown
(its int8 duration predictor rounds some phonemes differently).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
INPUTS = Path(__file__).with_name("cpu_inputs.json")
VOICE = "jf_alpha"


def cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    simd = sorted(f for f in flags if f.startswith(("avx", "amx", "fma")))
    return f"{model}; {' '.join(simd)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="torch and onnxruntime intra-op threads")
    ap.add_argument("--only", default="short,medium,long")
    ap.add_argument("--no-official", action="store_true")
    ap.add_argument("--bf16", action="store_true", help="also tilewave with --dtype bfloat16 (its decoder and "
                    "generator; fast where the CPU has AVX-512 BF16)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import onnxruntime as ort

    from tilewave.engine.host_memory import keep_freed_memory
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.harness.model_bench import _official_kokoro, load_kokoro
    from tilewave.models.kokoro import onnx_weights_path
    from tilewave.text.vocab import encode

    if args.threads:
        torch.set_num_threads(args.threads)
    malloc = "freed blocks kept" if keep_freed_memory() else "system"  # as a CPU Session does, for all three
    phonemes = json.loads(INPUTS.read_text(encoding="utf-8"))["phonemes"]
    names = [n for n in args.only.split(",") if n]
    model, weights = load_kokoro("cpu", "float32")
    official, why = (None, "--no-official") if args.no_official else _official_kokoro(weights, "cpu")
    so = ort.SessionOptions()
    if args.threads:
        so.intra_op_num_threads = args.threads
    session = ort.InferenceSession(str(onnx_weights_path()), so, providers=["CPUExecutionProvider"])
    pack = load_voice(VOICE)

    runners, parity = {}, {}
    for name in names:
        ps = phonemes[name]
        ids, ref_s = encode(ps), style_for(pack, len(ps))
        tokens, style = ids.numpy().astype(np.int64), ref_s.numpy().astype(np.float32)

        def ours(ids=ids, ref_s=ref_s):
            return model(ids, ref_s, 1.0, generator=torch.Generator().manual_seed(0))

        def ours_bf16(ids=ids, ref_s=ref_s):
            return model(ids, ref_s, 1.0, generator=torch.Generator().manual_seed(0), dtype=torch.bfloat16)

        def onnx(tokens=tokens, style=style):
            return session.run(None, {"tokens": tokens, "style": style, "speed": np.ones(1, np.float32)})[0]

        def kmodel(ids=ids, ref_s=ref_s):
            torch.manual_seed(0)
            with torch.no_grad():
                return official.forward_with_tokens(ids, ref_s, 1.0)

        runners[name] = {"tilewave": ours, "onnxruntime": onnx, **({"official": kmodel} if official else {}),
                         **({"tilewave bf16": ours_bf16} if args.bf16 else {})}
        out = ours()
        p = {"tokens": int(ids.numel()), "audio_s": out.audio.numel() / 24000,
             "onnx_audio_s": int(onnx().size) / 24000}
        if args.bf16:
            p["bf16_durations_equal"] = bool(torch.equal(ours_bf16().durations, out.durations))
        if official:
            p["durations_equal"] = bool(torch.equal(out.durations, kmodel()[1]))
        parity[name] = p
        print(f"{name}: {p}", flush=True)

    times = {n: {r: [] for r in runners[n]} for n in names}
    for rnd in range(args.rounds):
        for name in names:
            order = list(runners[name])
            for r in order if rnd % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                runners[name][r]()
                times[name][r].append(time.perf_counter() - t0)
        print(f"round {rnd + 1}/{args.rounds} done", flush=True)

    report = {"machine": cpu_flags(), "cores": torch.get_num_threads(), "torch": torch.__version__,
              "onnxruntime": ort.__version__, "malloc": malloc, "rounds": args.rounds, "official": why or "kokoro 0.9.4 KModel",
              "results": {}}
    print(f"\n{report['machine']}\ntorch {torch.__version__} ({torch.get_num_threads()} threads), "
          f"onnxruntime {ort.__version__}, malloc {malloc}, {args.rounds} rounds, medians (min-max) in s")
    bf16 = " tilewave bf16 | bf16 / onnxruntime |" if args.bf16 else ""
    print(f"| sentence | audio | tilewave fp32 | onnxruntime int8 | official fp32 | tilewave / onnxruntime | durations vs official | onnxruntime's audio |{bf16}")
    print("|---|---|---|---|---|---|---|---|" + "---|---|" * bool(bf16))
    for name in names:
        med = {r: statistics.median(v) for r, v in times[name].items()}
        cell = {r: f"{med[r]:.2f} ({min(v):.2f}-{max(v):.2f})" for r, v in times[name].items()}
        p = parity[name]
        report["results"][name] = {"parity": p, "times_s": times[name], "median_s": med}
        print(f"| {name}, {p['tokens']} tokens | {p['audio_s']:.2f} s | {cell['tilewave']} | {cell['onnxruntime']} | "
              f"{cell.get('official', 'n/a')} | {med['tilewave'] / med['onnxruntime']:.2f} | "
              f"{ {True: 'identical', False: 'DIFFER'}.get(p.get('durations_equal'), 'n/a')} | "
              f"{p['onnx_audio_s']:.2f} s |" + (f" {cell['tilewave bf16']} | "
                                                 f"{med['tilewave bf16'] / med['onnxruntime']:.2f} |" if args.bf16 else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
