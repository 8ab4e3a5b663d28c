"""time_major_inputs off against on, in one process: the producers before the convs writing the conv's time-major
input themselves instead of the conv copying it (Kokoro: the resblocks' AdaINs, modules.norm_into_conv; BigVGAN:
every anti-aliased activation, replayed from one CUDA graph per form).

Per row (profile_gpu.py's workloads): the wall time of each form, interleaved off/on over rounds (median of 5
CUDA-event runs each), whether the audio is bit-identical, and one kernel profile per form (launches, kernel time,
the time-major copy's share).

  python3 benchmarks/diag/time_major_gpu.py --json out.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.diag.profile_gpu import _median_ms, kernel_profile  # noqa: E402

ROWS = {  # name: (input or batch size, dtype, precision mode)
    "kokoro-383-bf16": ("medium", "bfloat16", "tf32x3"),
    "kokoro-383-tf32": ("medium", "float32", "tf32"),
    "kokoro-77-bf16": ("short", "bfloat16", "tf32x3"),
    "kokoro-batch64-bf16": (64, "bfloat16", "tf32x3"),
    "bigvgan-10s-bf16": ("bigvgan", "bfloat16", "tf32x3"),
    "bigvgan-10s-tf32": ("bigvgan", "float32", "tf32"),
    "bigvgan-10s-tf32x3": ("bigvgan", "float32", "tf32x3"),
}
COPY = "_time_major_pad_kernel"


def _forms(model, what, dtype):
    """The row's run: a fn returning its audio list (Kokoro graphed or padded; BigVGAN from a CUDA graph per form)."""
    if what == "bigvgan":
        from tilewave.ops.graphs import GraphCache

        x, graphs = model.workload_x, GraphCache(max_graphs=2)

        def run():
            return [graphs.run((model.time_major_on, tuple(x.shape)), lambda v: (model(v),), (x,))[0]]
        return run
    from tilewave.engine.runner import KokoroRunner
    from tilewave.engine.voices import load_voice, style_for
    from tilewave.harness import model_bench as MB
    from tilewave.precision import torch_dtype
    from tilewave.text.vocab import encode

    dev, dt, pack = "cuda", torch_dtype(dtype), load_voice(MB.VOICE)
    if isinstance(what, int):
        sentences = MB.batch_sentences(None, what)
        ids = [encode(ps)[0].to(dev) for ps in sentences]
        ref_s = torch.cat([style_for(pack, len(ps)).reshape(1, -1) for ps in sentences]).to(dev)

        def run():
            gens = [torch.Generator(dev).manual_seed(i) for i in range(len(ids))]
            return [o.audio for o in model.forward_batch(ids, ref_s, [1.0] * len(ids), gens, dtype=dt)]
    else:
        ps = MB.read_inputs(None)[what]
        ids, ref_s = encode(ps).to(dev), style_for(pack, len(ps)).to(dev)
        runner = KokoroRunner(model, cuda_graphs=True)

        def run():
            return [runner.forward(ids, ref_s, 1.0, generator=torch.Generator(dev).manual_seed(0), dtype=dt).audio]
    return run


def compare_row(name: str, model, rounds: int) -> dict:
    from tilewave.precision import scope

    what, dtype, mode = ROWS[name]
    with scope(mode):
        run = _forms(model, what, dtype)
        audio, times, prof = {}, {False: [], True: []}, {}
        for on in (False, True):
            model.time_major_inputs(on)
            audio[on] = [a.clone() for a in run()]
        for _ in range(rounds):
            for on in (False, True):
                model.time_major_inputs(on)
                times[on].append(_median_ms(run))
        for on in (False, True):
            model.time_major_inputs(on)
            p = kernel_profile(run)
            copy = sum(t["us"] for t in p["top"] if COPY in t["kernel"])
            prof[on] = {"kernel_ms": p["kernel_us"] / 1e3, "launches": p["launches"], "copy_top_us": copy,
                        "top": p["top"][:6]}
    model.time_major_inputs(False)
    same = all(torch.equal(a, b) for a, b in zip(audio[False], audio[True]))
    worst = max(float((a.float() - b.float()).abs().max()) for a, b in zip(audio[False], audio[True]))
    audio_s = sum(a.numel() for a in audio[False]) / 24000
    off, on = statistics.median(times[False]), statistics.median(times[True])
    return {"row": name, "dtype": dtype, "precision": mode, "audio_s": audio_s, "off_ms": off, "on_ms": on,
            "off_runs": times[False], "on_runs": times[True], "speedup": off / on, "bit_identical": same,
            "max_abs_diff": worst, "profile_off": prof[False], "profile_on": prof[True]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of: {', '.join(ROWS)}")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("time_major_gpu.py needs a GPU")
    import triton

    from tilewave.harness import model_bench as MB

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "rows": []}
    print(f"# {report['gpu']}, torch {report['torch']}, triton {report['triton']}", flush=True)
    kokoro = []  # loaded on the first Kokoro row; one model: each call's dtype picks its decoder copy
    for name in args.rows.split(","):
        try:
            if ROWS[name][0] == "bigvgan":
                w = MB.vocoder_workload("bigvgan", "cuda", getattr(torch, ROWS[name][1]))
                model = w["model"]
                model.workload_x = w["x"]
            else:
                kokoro = kokoro or [MB.load_kokoro("cuda", "float32")[0]]
                model = kokoro[0]
            r = compare_row(name, model, args.rounds)
        except Exception as exc:  # one row failing leaves the others' figures
            print(f"## {name}: FAILED {type(exc).__name__}: {exc}", flush=True)
            report["rows"].append({"row": name, "error": repr(exc)})
            continue
        report["rows"].append(r)
        po, pn = r["profile_off"], r["profile_on"]
        print(f"## {name}: off {r['off_ms']:.2f} ms, on {r['on_ms']:.2f} ms ({r['speedup']:.3f}x; "
              f"{r['audio_s'] / (r['on_ms'] / 1e3):,.0f}x real time on), bit-identical {r['bit_identical']} "
              f"(max |diff| {r['max_abs_diff']:.3g}); kernels off {po['kernel_ms']:.2f} ms / {po['launches']} "
              f"launches (copy {po['copy_top_us']:.0f} us), on {pn['kernel_ms']:.2f} ms / {pn['launches']} "
              f"(copy {pn['copy_top_us']:.0f} us)", flush=True)
        print("   on top: " + "; ".join(f"{t['kernel'][:40]} {t['us']:.0f}us" for t in pn["top"]), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
