"""The ASR round trip of a folder of synthesized sentences (benchmarks/fidelity_kokoro.py --wav-dir): per config,
the word error rate of what Whisper tiny.en hears against the sentences' texts, pooled over the sentences.

  python3 -m tests.asr.wer_dir DIR [--json FILE]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import soundfile as sf

from tests.asr.asr import transcribe, word_error_rate


def folder_wer(folder: Path) -> list[dict]:
    index = json.loads((folder / "index.json").read_text())
    texts, rows = index["texts"], []
    for label, files in index["configs"].items():
        per = {}
        for name, file in files.items():
            if name not in texts:
                continue
            audio, rate = sf.read(folder / file, dtype="float32")
            heard = transcribe(audio, rate)
            per[name] = {"heard": heard, "wer": word_error_rate(texts[name], heard)}
        words = {name: len(texts[name].split()) for name in per}
        pooled = sum(per[n]["wer"] * words[n] for n in per) / max(1, sum(words.values()))
        rows.append({"config": label, "wer": pooled, "sentences": per})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    rows = folder_wer(args.folder)
    for r in rows:
        wrong = ", ".join(f"{n}: {s['heard']!r}" for n, s in r["sentences"].items() if s["wer"] > 0)
        print(f"{r['config']:<34} WER {r['wer']:.3f}  {wrong}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
