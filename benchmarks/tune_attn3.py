"""Decode (sdpa_decode_sink) at 32k cached keys: the split kernel's merge, split count and pipeline depth (issue 5).

64 query heads over 8 KV heads, batch 1. Candidates:
  * sep:   the current form: split kernel, then the combine kernel as a programmatic dependent launch (PDL);
  * fused: the split of a head tile that arrives last merges every split in the same launch. merge=(rows,
           elements a step, stages): old = (16, 2048, 1), 16 rows (8 of them padding), 2 splits a step at head
           dim 64, no prefetch (16 dependent L2 round trips); the new ones take 8-row head slices and pipeline
           the steps' loads (Triton cp.async, stages - 1 steps in flight);
  * pps:   programs per SM the split count aims for (2: 32 splits of 1024 keys at h64; 1: 16 of 2048);
  * qloop: q loaded inside the key loop, so the pipeliner fetches it with the first K/V tiles (qpre: before the
           loop, where the K/V prologue waits behind q's shared-memory store for its DRAM round trip).
Round 2 (H200, the launcher follows it): separate + PDL won every 16-bit shape (32k h64 24.0 µs = 65%, h128 39.1 =
80%, 4k h64 11.5); q in the loop gained nothing there (24.3, 39.4) but 0.7 µs for fused float32 at 4k (20.5). This
version adds the window-128 shape (one split) and the separate combine for float32 at 4k (not measured yet). The
in-thread merges it also had were measured in session 4 (benchmarks/diag_decode.py: 31.0-34.4 µs at 32k h64 fp16
against 23.4 separate) and removed from the kernel.
Each candidate is checked against the float64 oracle first (a wrong one is reported, not timed), then timed
with time_cuda (the better of two medians); % is of the cache bytes (K and V once) over the measured copy
bandwidth. The best fp16 candidate per shape is timed again in bf16. Last, every fused form timed is launched
300 times and compared bit for bit with its first output (its merge depends on cross-program ordering).

    PYTHONPATH=. timeout 150 python3 benchmarks/tune_attn3.py
    TUNE_DRY=1 TRITON_INTERPRET=1 PYTHONPATH=. python benchmarks/tune_attn3.py     (CPU smoke run, tiny shapes)
Nsight Compute (if the lead has time): benchmarks/gpu_diag.sh stalls attn3 _decode_split_kernel sdpa_decode_sink
"32768 cached keys, 64 q / 8 kv heads x 64" float16
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
import sys
import time

import torch

from tilewave.harness.timing import time_cuda
from tilewave.spec.tolerance import tolerance
from tilewave.kernels import attention as A

COPY_GBPS = 4279.0  # measured device copy bandwidth (session 3)
WORKERS = 16
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TOL_ROW = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
DRY = os.environ.get("TUNE_DRY") == "1"
DEV = "cpu" if DRY else "cuda"
BUDGET_S = 125  # stop timing here (run under `timeout 150`)

SHAPES = {"32k h64": (32768, 64, None), "32k h128": (32768, 128, None), "4k h64": (4096, 64, None),
          "32k h64 window 128": (32768, 64, 128)}  # (cached keys, head dim, window)
# merges, (rows, elements a step, stages): OLD is the form before this branch (16 rows, 8 of them
# padding at GQA 8, 2 splits a step at head dim 64, no prefetch). Round 1 (H200): every fused merge of the
# [heads·splits, D] form lost to the separate combine + PDL (32k h64: 24.5 µs sep against 28.9 best fused at 2
# programs per SM, 26.1 at 1; 4k h64: 11.6 sep against 15.2 fused), also with 2 steps in flight: a step's
# reductions cross threads through shared memory.
OLD = (16, 2048, 1)
M8 = (8, 1024, 8)    # round 1's best fused at 2 programs per SM: 2 splits a step at h64, 7 in flight
if DRY:
    SHAPES = {"tiny h64": (300, 64, None)}


def _c(shape, cfg, fused, pps, merge=None, dt="fp16", prec="tf32", qloop=True):
    return {"shape": shape, "dt": dt, "prec": prec, "cfg": cfg, "fused": fused, "pps": pps,
            "pdl": not fused, "merge": merge, "qloop": qloop}


def candidates() -> list[dict]:
    if DRY:
        return [_c("tiny h64", (16, 4, 1), False, 2), _c("tiny h64", (16, 4, 1), True, 2, OLD, qloop=False),
                _c("tiny h64", (16, 4, 1), True, 2, M8)]
    out = []
    s = "32k h64"  # the launcher's form before: sep+pdl, (128, 4, 3), 2 programs per SM, q loaded before the loop
    out += [_c(s, (128, 4, 3), False, 2, qloop=False), _c(s, (128, 4, 3), False, 2), _c(s, (256, 4, 3), False, 1),
            _c(s, (128, 8, 3), False, 2), _c(s, (128, 4, 4), False, 2)]
    out += [_c(s, (128, 4, 3), True, 2, M8), _c(s, (256, 4, 3), True, 1, M8)]
    s = "32k h128"
    out += [_c(s, (64, 4, 3), False, 2, qloop=False), _c(s, (64, 4, 3), False, 2), _c(s, (128, 8, 2), False, 2)]
    out += [_c(s, (64, 4, 3), True, 2, M8), _c(s, (128, 4, 4), True, 1, M8)]
    s = "4k h64"  # before: fused, (128, 8, 3), old merge, q before the loop; round 1: sep+pdl 11.6 µs against 16.0
    out += [_c(s, (128, 8, 3), True, 2, OLD, qloop=False), _c(s, (128, 8, 3), False, 2, qloop=False),
            _c(s, (128, 8, 3), False, 2), _c(s, (128, 4, 3), False, 2), _c(s, (64, 4, 3), False, 2)]
    out += [_c(s, (128, 4, 3), True, 2, M8)]
    f32 = ("fp32", "tf32x3")
    out += [_c(s, (64, 8, 2), True, 2, OLD, *f32, qloop=False), _c(s, (64, 8, 2), True, 2, M8, *f32),
            _c(s, (64, 8, 2), False, 2, None, *f32, qloop=False), _c(s, (64, 8, 2), False, 2, None, *f32)]
    s = "32k h64 window 128"  # one split: the fused form has nothing to merge
    out += [_c(s, (128, 8, 3), True, 2, OLD, qloop=False), _c(s, (128, 8, 3), True, 2, M8),
            _c(s, (128, 8, 3), False, 2, qloop=False), _c(s, (128, 8, 3), False, 2)]
    return out


_problems: dict = {}


def problem(shape: str, dt: str, oracle: bool = True) -> dict:
    key = (shape, dt)
    if key in _problems:
        return _problems[key]
    T, D, window = SHAPES[shape]
    B, H, H_kv = 1, 64, 8
    dtype = DTYPES[dt]
    gen = torch.Generator(DEV).manual_seed(0)
    q = (torch.randn((B, H, D), generator=gen, device=DEV) * 1.5).to(dtype)
    kc = torch.randn((B, H_kv, T, D), generator=gen, device=DEV).to(dtype)
    vc = torch.randn((B, H_kv, T, D), generator=gen, device=DEV).to(dtype)
    sinks = torch.randn((H,), generator=gen, device=DEV) * 2
    ref = None
    if oracle:
        ref = A.sdpa_decode_sink_oracle(q.double(), kc.double(), vc.double(), sinks.double(), window=window)
    p = {"args": (q, kc, vc, sinks), "ref": ref, "out": torch.empty_like(q), "window": window,
         "cache_bytes": 2 * B * H_kv * min(T, window or T) * D * q.element_size()}
    _problems[key] = p
    return p


def launcher(c: dict, oracle: bool = True):
    p = problem(c["shape"], c["dt"], oracle)
    q, kc, vc, sinks = p["args"]
    tiles = kc.shape[0] * kc.shape[1] * math.ceil(q.shape[1] // kc.shape[1] / A.DECODE_BLOCK_G)
    sms = 64 if DRY else torch.cuda.get_device_properties(0).multi_processor_count
    splits = math.ceil(c["pps"] * sms / tiles)
    out = p["out"]

    def run():
        A.DECODE_PDL = c["pdl"]
        A.DECODE_Q_IN_LOOP = c["qloop"]
        return A._launch_decode(q, kc, vc, sinks, None, p["window"], None, c["prec"], splits, out, config=c["cfg"],
                                fused_combine=c["fused"], merge=c["merge"] or A._DEC_MERGE)
    return run


def tag(c: dict) -> str:
    form = f"fused merge={c['merge']}" if c["fused"] else "sep+pdl"
    return f"{c['prec']:<6} cfg={c['cfg']} pps={c['pps']} q{'loop' if c['qloop'] else 'pre'} {form}"


def _compile_worker(items: list[dict]) -> None:
    for c in items:
        try:
            launcher(c, oracle=False)()
        except Exception:
            pass  # the main process reports the failure
    torch.cuda.synchronize()


def sync() -> None:
    if not DRY:
        torch.cuda.synchronize()


def err_vs_oracle(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out - ref).abs().max() / max(1.0, ref.abs().max().item())).item()


def timed(fn) -> float:
    fn()
    sync()
    if DRY:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e6
    return min(time_cuda(fn, warmup=10, reps=60).median_us for _ in range(2))


def measure(c: dict) -> float | None:
    p = problem(c["shape"], c["dt"])
    fn = launcher(c)
    try:
        p["out"].fill_(float("nan"))
        fn()
        sync()
    except Exception as exc:
        print(f"   {tag(c):<52} FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:100]}", flush=True)
        return None
    err = err_vs_oracle(p["out"], p["ref"])
    tol = tolerance(TOL_ROW[c["dt"]], "reduction")
    if not err <= tol:
        print(f"   {tag(c):<52} WRONG err {err:.2e} > {tol:.0e}", flush=True)
        return None
    us = timed(fn)
    bw = p["cache_bytes"] / us / 1e3 / COPY_GBPS
    print(f"   {tag(c):<52} {us:8.1f} µs  {bw:6.1%} of copy BW  err {err:.1e}", flush=True)
    return us


def stress(c: dict, launches: int = 300) -> None:
    p = problem(c["shape"], c["dt"])
    fn = launcher(c)
    fn()
    sync()
    # back to back with no host synchronisation in between (launches may overlap, as in a decode loop);
    # each output is copied off before the next launch poisons the buffer
    outs = []
    for _ in range(launches):
        p["out"].fill_(float("nan"))
        fn()
        outs.append(p["out"].clone())
    differ = sum(int(not torch.equal(o, outs[0])) for o in outs[1:])
    print(f"# stress {c['shape']} {c['dt']} {tag(c)}: {differ} of {launches - 1} launches differ from the "
          f"first (err {err_vs_oracle(outs[0], p['ref']):.1e})", flush=True)


def main() -> None:
    t_start = time.time()
    todo = candidates()
    print(f"# {len(todo)} candidates; torch {torch.__version__}, triton {__import__('triton').__version__}, "
          f"{'CPU interpreter (dry run)' if DRY else torch.cuda.get_device_name()}", flush=True)
    if not DRY and "--serial" not in sys.argv:
        todo_bf16 = [{**c, "dt": "bf16"} for c in todo if c["dt"] == "fp16"]  # the bf16 winners compile too
        jobs = todo + todo_bf16
        try:
            with mp.get_context("spawn").Pool(WORKERS) as pool:
                pool.map(_compile_worker, [jobs[w::WORKERS] for w in range(WORKERS)])
            print(f"# compiled {len(jobs)} launches in {time.time() - t_start:.1f} s", flush=True)
        except Exception as exc:
            print(f"# parallel compile failed ({type(exc).__name__}: {exc}); compiling serially", flush=True)
    best: dict = {}
    group = None
    for n_done, c in enumerate(todo):
        if time.time() - t_start > BUDGET_S:
            print(f"\n# time budget reached: {len(todo) - n_done} candidates not timed")
            break
        if (c["shape"], c["dt"]) != group:
            group = (c["shape"], c["dt"])
            print(f"\n## {c['shape']} {c['dt']} ({problem(*group)['cache_bytes'] / 1e6:.1f} MB of cache)", flush=True)
        us = measure(c)
        if us is not None and (group not in best or us < best[group][0]):
            best[group] = (us, c)
    print("\n## the best fp16 candidate of each shape in bf16", flush=True)
    for (shape, dt), (us, c) in list(best.items()):
        if dt == "fp16" and time.time() - t_start < BUDGET_S + 10:
            measure({**c, "dt": "bf16"})
    print("", flush=True)
    fused = [c for c in todo if c["fused"] and c["dt"] == "fp16"]
    for c in {tag(c) + c["shape"]: c for c in fused if c["merge"] != OLD}.values():
        if time.time() - t_start > BUDGET_S + 20:
            print("# stress: time budget reached")
            break
        stress(c, 300 if not DRY else 3)
    print("\n# best per shape and dtype")
    for (shape, dt), (us, c) in best.items():
        print(f"   {shape:<18} {dt:<5} {us:8.1f} µs  {problem(shape, dt)['cache_bytes'] / us / 1e3 / COPY_GBPS:6.1%}  "
              f"{tag(c)}")
    print(f"# total {time.time() - t_start:.1f} s")


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    main()
