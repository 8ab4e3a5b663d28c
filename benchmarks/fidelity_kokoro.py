"""Kokoro's fidelity in every precision mode and storage dtype against exact float32 (precision 'ieee', dtype float32).

For each sentence and each (dtype, precision) pair: are the durations identical to exact float32's, how far is
the audio (tolerance.log_spectral_distance: mean |Δ log-magnitude| over a three-resolution STFT, in nepers; and
the scaled max sample error), and how long it took. The first row is a scale to read the others by: exact
float32 again with another seed of the harmonic source's random draws, a change no listener can tell apart.

  python3 benchmarks/fidelity_kokoro.py --device cpu                      # phonemizes SENTENCES with espeak
  python3 benchmarks/fidelity_kokoro.py --device cuda --inputs benchmarks/fidelity_inputs.json --json out.json
  python3 benchmarks/fidelity_kokoro.py --write-inputs benchmarks/fidelity_inputs.json    # for a machine without espeak

On a CPU only the PyTorch path runs: the precision modes change nothing there (only 'ieee' runs unless
--precisions says otherwise); the dtype does.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SENTENCES = {
    "library": "The library opens at nine, but the reading room stays closed until noon on Sundays.",
    "folder": "Please hand me the blue folder on the top shelf, next to the old lamp.",
    "weather": "Rain is expected tonight, with strong winds along the northern coast.",
    "question": "Did you remember to water the plants before you left for the airport?",
    "boats": "Seventeen small boats drifted slowly past the lighthouse at dawn.",
    "laugh": "She laughed, shook her head, and said that the answer had been obvious all along.",
    "figures": "Our quarterly figures show steady growth in every region except the south.",
    "thunder": "Wow! That was the loudest thunderclap I have ever heard.",
}


def phonemize() -> dict[str, str]:
    from tilewave.text.espeak import EspeakPhonemizer

    ph = EspeakPhonemizer("en-us")
    return {name: ph([text])[0] for name, text in SENTENCES.items()}


def _synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run(phonemes: dict[str, str], device: str, precisions: list[str], dtypes: list[str], voice: str,
        seed: int, wav_dir: Path | None = None) -> dict:
    from tilewave import precision
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.models.kokoro import KokoroModel
    from tilewave.spec.tolerance import log_spectral_distance, scaled_max_error
    from tilewave.text import encode

    model = KokoroModel.from_pretrained(device=device)
    pack = load_voice(voice)
    items = [(name, encode(ps).to(device), style_for(pack, len(ps)).reshape(1, -1).to(device))
             for name, ps in phonemes.items()]
    shortest = min(items, key=lambda item: item[1].shape[1])

    def synthesize(ids, ref_s, mode, dtype, draw_seed):
        with precision.scope(mode):
            out = model(ids, ref_s, generator=torch.Generator(device).manual_seed(draw_seed),
                        dtype=precision.torch_dtype(dtype))
        return out.durations.cpu(), out.audio.cpu()

    # (label, mode, dtype, seed of the draws); the reference first, the scale second
    configs = [("float32 ieee (reference)", "ieee", "float32", seed),
               (f"float32 ieee, seed {seed + 1} (scale)", "ieee", "float32", seed + 1)]
    configs += [(f"{dtype} {mode}", mode, dtype, seed) for dtype in dtypes for mode in precisions
                if (dtype, mode) != ("float32", "ieee")]
    for _, mode, dtype, draw_seed in configs:  # warm-up: Triton compiles, the bfloat16 weights are made
        synthesize(*shortest[1:], mode, dtype, draw_seed)
    outs, seconds = {c[0]: [] for c in configs}, {c[0]: 0.0 for c in configs}
    # sentence by sentence, every config in turn: a load that comes and goes on the machine falls on all alike
    for _, ids, ref_s in items:
        for label, mode, dtype, draw_seed in configs:
            _synchronize(device)
            start = time.perf_counter()
            outs[label].append(synthesize(ids, ref_s, mode, dtype, draw_seed))
            _synchronize(device)
            seconds[label] += time.perf_counter() - start
    reference = outs[configs[0][0]]
    if wav_dir is not None:
        write_wavs(wav_dir, [name for name, _, _ in items], outs)
    audio_seconds = sum(a.numel() for _, a in reference) / 24000

    def row(label, outs, seconds):
        per = []
        for (name, _, _), (dur, audio), (ref_dur, ref_audio) in zip(items, outs, reference):
            n = min(audio.numel(), ref_audio.numel())  # differing durations: compared over the common length
            per.append({"name": name, "durations_identical": bool(torch.equal(dur, ref_dur)),
                        "frames": int(dur.sum()), "reference_frames": int(ref_dur.sum()),
                        "log_spectral_distance": log_spectral_distance(audio[:n], ref_audio[:n]),
                        "scaled_max_error": scaled_max_error(audio[:n], ref_audio[:n])})
        lsd = [p["log_spectral_distance"] for p in per]
        return {"config": label, "durations_identical": sum(p["durations_identical"] for p in per),
                "sentences": len(per), "lsd_mean": sum(lsd) / len(lsd), "lsd_max": max(lsd),
                "scaled_max_error_max": max(p["scaled_max_error"] for p in per), "seconds": seconds,
                "x_real_time": audio_seconds / seconds, "items": per}

    rows = [row(label, outs[label], seconds[label]) for label, *_ in configs]
    return {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
            "voice": voice, "seed": seed, "audio_seconds": audio_seconds,
            "phonemes": {name: len(ps) for name, ps in phonemes.items()}, "rows": rows}


def write_wavs(wav_dir: Path, names: list[str], outs: dict) -> None:
    """Each config's audio per sentence (16-bit WAV, 24 kHz) and index.json: the sentences' texts (SENTENCES) and
    per config label {sentence: file}, what an ASR round trip on another machine reads (tests/asr/wer_dir.py)."""
    import soundfile as sf

    wav_dir.mkdir(parents=True, exist_ok=True)
    index = {}
    for c, (label, per) in enumerate(outs.items()):
        index[label] = {}
        for name, (_, audio) in zip(names, per):
            index[label][name] = f"c{c}_{name}.wav"
            sf.write(wav_dir / index[label][name], audio.float().numpy().reshape(-1), 24000, subtype="PCM_16")
    texts = {name: SENTENCES[name] for name in names if name in SENTENCES}
    (wav_dir / "index.json").write_text(json.dumps({"texts": texts, "configs": index}, indent=1) + "\n")


def format_table(result: dict) -> str:
    lines = [f"{result['device']}, torch {result['torch']}: {len(result['phonemes'])} sentences, "
             f"{result['audio_seconds']:.1f} s of audio, voice {result['voice']}",
             f"{'config':<34} {'durations':>9} {'LSD mean':>9} {'LSD max':>8} {'max err':>8} {'time s':>7} {'x RT':>6}"]
    for r in result["rows"]:
        lines.append(f"{r['config']:<34} {r['durations_identical']:>4}/{r['sentences']:<4} {r['lsd_mean']:>9.4f} "
                     f"{r['lsd_max']:>8.4f} {r['scaled_max_error_max']:>8.1e} {r['seconds']:>7.1f} "
                     f"{r['x_real_time']:>6.2f}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--inputs", metavar="FILE", help="phonemes by name (JSON); default: phonemize SENTENCES (espeak)")
    p.add_argument("--write-inputs", metavar="FILE", help="phonemize SENTENCES into FILE and stop")
    p.add_argument("--precisions", help="comma-separated modes (default: ieee,tf32x3,tf32 on cuda, ieee on cpu)")
    p.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated storage dtypes")
    p.add_argument("--voice", default="af_heart")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="FILE", help="also write every figure, sentence by sentence, as JSON")
    p.add_argument("--wav-dir", metavar="DIR", type=Path, help="also write each config's audio there (index.json)")
    args = p.parse_args()
    if args.write_inputs:
        Path(args.write_inputs).write_text(json.dumps(phonemize(), ensure_ascii=False, indent=1) + "\n")
        return
    phonemes = json.loads(Path(args.inputs).read_text()) if args.inputs else phonemize()
    precisions = (args.precisions or ("ieee,tf32x3,tf32" if args.device == "cuda" else "ieee")).split(",")
    result = run(phonemes, args.device, precisions, args.dtypes.split(","), args.voice, args.seed, args.wav_dir)
    print(format_table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
