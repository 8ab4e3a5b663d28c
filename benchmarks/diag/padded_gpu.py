"""ALBERT fused (KokoroModel.fuse_albert) and padded batches from CUDA graphs (BatchPolicy.padded_batches), each
beside what it would replace and the official model, in one process on the GPU.

singles: the harness inputs (77 / 383 / 510 phonemes), every (dtype, mode), graphed, ALBERT unfused and fused;
    the official KModel (float32, TF32 off) timed in the same process; durations against the official's.
batches: B mixed sentences (model_bench.batch_sentences) as graphed singles one by one, one eager padded pass and
    one padded pass from the graphs of its batch bucket (recorded on the key's second call: warm-up first);
    durations against the graphed singles' (must be equal), the largest log-spectral distance.

    python benchmarks/diag/padded_gpu.py [--batches 2,3,4,8,16] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys

import torch

from tilewave import precision
from tilewave.engine.policy import BatchPolicy
from tilewave.engine.runner import KokoroRunner
from tilewave.engine.voices import load_voice, style_for
from tilewave.harness import model_bench as MB
from tilewave.harness.timing import time_model
from tilewave.spec.tolerance import log_spectral_distance
from tilewave.text.vocab import encode

SR = 24000


def timed(fn, reps=5):
    out = fn()
    torch.cuda.synchronize()
    return time_model(fn, "cuda", warmup=2, reps=reps).median_us / 1e3, out


def singles(model, official, pack, rows):
    graphed = KokoroRunner(model, cuda_graphs=True)
    for name, ps in MB.read_inputs(None).items():
        ids, ref_s = encode(ps).cuda(), style_for(pack, len(ps)).cuda()

        def official_fn():
            torch.manual_seed(0)
            with torch.no_grad():
                return official.forward_with_tokens(ids, ref_s, 1.0)

        off_ms, (off_audio, off_dur) = timed(official_fn) if official is not None else (None, (None, None))
        for dtype, mode in (("bfloat16", "tf32x3"), ("float32", "tf32x3"), ("float32", "tf32"), ("float32", "ieee")):
            for fused in (False, True):
                model.fuse_albert(fused)

                def ours():
                    return graphed.forward(ids, ref_s, 1.0, torch.Generator("cuda").manual_seed(0),
                                           dtype=precision.torch_dtype(dtype))

                with precision.scope(mode):
                    ms, out = timed(ours)
                audio_s = out.audio.numel() / SR
                row = {"part": "single", "input": name, "phonemes": len(ps), "dtype": dtype, "mode": mode,
                       "fused_albert": fused, "ms": ms, "x_real_time": audio_s / (ms / 1e3), "official_ms": off_ms,
                       "durations_equal_official": None if off_dur is None else
                       bool(torch.equal(out.durations.cpu(), off_dur.cpu())),
                       "finite": bool(torch.isfinite(out.audio).all())}
                rows.append(row)
                print(f"single {name:6s} {len(ps):3d} {dtype:8s} {mode:6s} fused={fused!s:5s} {ms:7.2f} ms "
                      f"{row['x_real_time']:7.0f}x  official {off_ms:.1f} ms  dur={row['durations_equal_official']}",
                      flush=True)
    model.fuse_albert(False)


def batches(model, pack, sizes, fused, rows):
    model.fuse_albert(fused)
    for B in sizes:
        sentences = MB.batch_sentences(None, B)
        ids = [encode(ps)[0].cuda() for ps in sentences]
        ref_s = torch.cat([style_for(pack, len(ps)).reshape(1, -1) for ps in sentences]).cuda()
        speeds = [1.0] * B

        def gens():
            return [torch.Generator("cuda").manual_seed(i) for i in range(B)]

        for dtype, mode in (("bfloat16", "tf32x3"), ("float32", "tf32x3")):
            dt = precision.torch_dtype(dtype)
            res = {}
            with precision.scope(mode):
                for how, policy, padded in (("graphed singles", BatchPolicy(), False),
                                            ("eager padded", BatchPolicy(), True),
                                            ("graphed padded", BatchPolicy(padded_batches=True), True)):
                    if B > 16 and how == "graphed padded":
                        continue
                    runner = KokoroRunner(model, policy, cuda_graphs=True)
                    fn = lambda: runner.forward_batch(ids, ref_s, speeds, gens(), padded=padded, dtype=dt)  # noqa
                    fn()  # the batch keys' first (eager) call; timed() then records and replays
                    res[how] = timed(fn)
            base = res["graphed singles"][1]
            audio_s = sum(o.audio.numel() for o in base) / SR
            for how, (ms, outs) in res.items():
                row = {"part": "batch", "items": B, "dtype": dtype, "mode": mode, "fused_albert": fused, "how": how,
                       "ms": ms, "x_real_time": audio_s / (ms / 1e3), "audio_s": audio_s,
                       "durations_equal": all(torch.equal(a.durations, b.durations) for a, b in zip(outs, base)),
                       "max_lsd": max(log_spectral_distance(a.audio, b.audio) for a, b in zip(outs, base)),
                       "finite": all(bool(torch.isfinite(o.audio).all()) for o in outs)}
                rows.append(row)
                print(f"batch {B:2d} {dtype:8s} {mode:6s} fused={fused!s:5s} {how:16s} {ms:8.2f} ms "
                      f"{row['x_real_time']:7.0f}x  dur={row['durations_equal']} lsd={row['max_lsd']:.4f}",
                      flush=True)
    model.fuse_albert(False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="2,3,4,8,16")
    ap.add_argument("--parts", default="singles,batches")
    ap.add_argument("--json")
    args = ap.parse_args()
    model, weights = MB.load_kokoro("cuda", "float32")
    official, why = MB._official_kokoro(weights, "cuda")
    if official is None:
        print("official:", why)
    pack = load_voice(MB.VOICE)
    rows: list[dict] = []
    try:
        with torch.inference_mode():
            if "singles" in args.parts:
                singles(model, official, pack, rows)
            if "batches" in args.parts:
                sizes = [int(b) for b in args.batches.split(",")]
                batches(model, pack, sizes, False, rows)
                if "fusedbatches" in args.parts:
                    batches(model, pack, sizes, True, rows)
    finally:
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
