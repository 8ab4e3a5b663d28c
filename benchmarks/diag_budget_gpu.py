"""The engine's batches on a GPU by frame budget and fill, beside the padded forward_batch of the same items.

    python benchmarks/diag_budget_gpu.py --batches 8,32,64 --dtypes bfloat16,float32 [--json FILE]

For each storage dtype (products tf32x3) and B mixed sentences (model_bench's batch sentences): the padded
forward_batch, then the engine (a Session with the generator eager, as the batch bench runs it) at the budgets
and fills of CONFIGS: the 4,096-frame budget that sessions had before, and the budget a Session now takes from the
GPU's free memory with two fills. Medians of --reps rounds; durations against the padded pass's.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from tilewave.engine import session as session_mod
from tilewave.engine.scheduler import DEFAULT_FRAME_BUDGET
from tilewave.engine.voices import load_voice, style_for
from tilewave.harness.model_bench import VOICE, batch_sentences, load_kokoro
from tilewave.precision import scope
from tilewave.text.vocab import encode

CONFIGS = (("budget 4096, fill 1024", DEFAULT_FRAME_BUDGET, 1024), ("budget from memory, fill 1024", None, 1024),
           ("budget from memory, fill 1/4 of it", None, "quarter"))


def _median_ms(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="8,32,64")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    pack, rows = load_voice(VOICE), []
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; free memory "
          f"{torch.cuda.mem_get_info()[0] / 1e9:.1f} GB; medians of {args.reps}")
    for dtype in args.dtypes.split(","):
        model, _ = load_kokoro("cuda", dtype)
        for batch in map(int, args.batches.split(",")):
            sentences = batch_sentences(None, batch)
            ids = [encode(ps)[0].cuda() for ps in sentences]
            ref_s = torch.cat([style_for(pack, len(ps)).reshape(1, -1) for ps in sentences]).cuda()
            with scope("tf32x3"):
                def padded():
                    gens = [torch.Generator("cuda").manual_seed(s) for s in range(batch)]
                    return model.forward_batch(ids, ref_s, [1.0] * batch, gens, padded=True,
                                               dtype=getattr(torch, dtype))
                ms, ref = _median_ms(padded, args.reps)
                audio_s = sum(o.audio.numel() for o in ref) / 24000
                rows.append({"dtype": dtype, "batch": batch, "mode": "padded forward_batch", "ms": ms})
                print(f"{dtype:9} B={batch:3}  padded forward_batch                 {ms:8.1f} ms  "
                      f"{audio_s / ms * 1e3:7.0f}x")
                for name, budget, fill in CONFIGS:
                    session = session_mod.Session("cuda", model=model, voice=VOICE, precision="tf32x3",
                                                  dtype=dtype, cuda_graphs=False).load()
                    if budget is not None:
                        session.frame_budget = budget
                    # read when the session makes its scheduler (the first submit)
                    session_mod.GPU_FILL_FRAMES = session.frame_budget // 4 if fill == "quarter" else fill

                    def engine():
                        jobs = [session.prepare(ps, phonemes=True, seed=s)[0] for s, ps in enumerate(sentences)]
                        requests = [session.scheduler.submit(j, s, block=True) for s, j in enumerate(jobs)]
                        return [c for r in requests for c in r]
                    try:
                        ms, chunks = _median_ms(engine, args.reps)
                        same = sum(torch.equal(c.durations.cpu(), o.durations.cpu()) for c, o in zip(chunks, ref))
                    finally:
                        session.close()
                    rows.append({"dtype": dtype, "batch": batch, "mode": name, "ms": ms,
                                 "frame_budget": session.frame_budget, "fill": session_mod.GPU_FILL_FRAMES,
                                 "durations_identical": f"{same}/{batch}"})
                    print(f"{dtype:9} B={batch:3}  engine, {name:34} {ms:8.1f} ms  {audio_s / ms * 1e3:7.0f}x  "
                          f"budget {session.frame_budget}, fill {session_mod.GPU_FILL_FRAMES}, durations "
                          f"{same}/{batch}")
        del model
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
