"""Candidate sweep for the spectral kernels (GPU), beside torch.stft / torch.istft (cuFFT) in the same run.

PYTHONPATH=. python3 benchmarks/tune_spectral.py

Every candidate is checked against a float64 reference (torch's own transforms in float64 on the GPU) with the
tolerance table's row for its storage dtype ('reduction'); a candidate over tolerance is reported, not timed.
Kernels are compiled first in parallel worker processes (Triton's on-disk cache), then timed one by one.
Columns: µs, peer µs (torch on cuFFT, same dtype), speedup, % of measured copy bandwidth (4,252 GB/s) on the
minimal bytes, and DFT-equivalent TFLOP/s (a direct DFT's 4·frames·n_fft·bins; the FFT kernels do 8x less at 1024).
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool

import torch
import triton

from tilewave.harness.timing import time_cuda
from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import spectral as K

COPY_GBS = 4252.0
WARM_BUDGET_S, TOTAL_BUDGET_S = 75.0, 135.0  # the lead runs this under `timeout 150`
# TUNE_SMOKE=1 TRITON_INTERPRET=1: the same script on the CPU interpreter at tiny shapes (checks the plumbing)
SMOKE = os.environ.get("TUNE_SMOKE") == "1"
DEV = "cpu" if SMOKE else "cuda"
SMALL_SHAPES = ((1, 301), (2, 257)) if SMOKE else ((1, 48001), (16, 96001))
BIG_B = 2 if SMOKE else 16
LARGE_N = {1: 3000, BIG_B: 5000} if SMOKE else {1: 240000, BIG_B: 480000}
LARGE_T = {1: 9, BIG_B: 13} if SMOKE else {1: 938, BIG_B: 1876}


def _time(fn, reps):
    if SMOKE:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e6
    return time_cuda(fn, reps=reps).median_us


# ---------------------------------------------------------------------------------------------------------------
# candidates
# ---------------------------------------------------------------------------------------------------------------
def _istft_small_ola(a, c, bs, B, NF, T, n_fft, hop, exp_sin, out, bt, warps, mode, chunk):
    basis = K._bases(n_fft, n_fft, str(a.device))
    ov = triton.cdiv(n_fft, hop)
    L_out = out.shape[-1]
    rows = triton.cdiv(L_out + n_fft // 2, hop)
    K._istft_ola_kernel[(B, triton.cdiv(rows, bt - ov + 1))](
        a, c, basis["even"], basis["odd"], basis["win"], basis["wsq"], out, T, L_out, bs,
        N_FFT=n_fft, HOP=hop, NF=NF, EXP_SIN=exp_sin, FAST=not SMOKE, MODE=mode, BT=bt,
        S_P=min(chunk, triton.next_power_of_2((bt - ov + 1) * hop)), num_warps=warps)
    return out


MODES = {0: "strided", 1: "flat-gather", 2: "joined-2d"}
# (frames, warps, mode, output chunk); rounds 1-1c: mode 1 (one flat store) at 256/4, one chunk, was best (~50%)
# (frames, warps, mode, chunk); rounds 1-1c: mode 1 (one flat store) at 256/4, one chunk, was best (~50% of copy BW)
OLA_CONFIGS = [(256, 4, 1, 4096), (512, 8, 1, 4096), (256, 4, 2, 4096), (256, 4, 0, 4096)]
# session 3 (time_cuda without host time or the flush's dirty lines: 256/4 at 52%; Nsight: 37.5% occupancy, limited
# by registers, issue 72% busy): TUNE_CASES=small sweeps the small iSTFT alone over frames and warps
SMALL_ONLY = os.environ.get("TUNE_CASES") == "small"
if SMALL_ONLY:
    OLA_CONFIGS = [(256, 4, 1, 4096), (128, 4, 1, 4096), (128, 2, 1, 4096), (256, 8, 1, 4096), (512, 4, 1, 4096),
                   (64, 2, 1, 4096), (256, 2, 1, 4096), (128, 8, 1, 4096)]


def small_istft_cases():
    cases = []
    for exp_sin in (False, True):
        for shape, label in zip(SMALL_SHAPES, ("Kokoro 10 s", "large")):
            for dtype in (torch.float32, torch.bfloat16):
                configs = OLA_CONFIGS if dtype == torch.float32 else OLA_CONFIGS[:2]
                cands = [(f"ola BT={bt} w={w} {MODES[m]}", ("ola", bt, w, m, ch)) for bt, w, m, ch in configs]
                cases.append({"op": "istft_exp_sin" if exp_sin else "istft", "n_fft": 20, "hop": 5, "B": shape[0],
                              "T": shape[1], "dtype": dtype, "label": label, "cands": cands})
    return cases


# (precision, frames per program, warps). Round 1c: [k1, k2, frame] I/O tiles 1.6x faster for stft; ieee best at
# 2/4, tf32x3 at 4/4 ~ 4/8; tf32 misses the float32 row; 16-bit data runs tf32.
FFT_CONFIGS = {"float32": [("ieee", 2, 4), ("ieee", 4, 8), ("tf32x3", 4, 8), ("tf32x3", 4, 4)],
               "bfloat16": [("tf32", 4, 4), ("tf32", 4, 8)]}


def large_cases():
    out = []
    for op in ("stft", "istft", "mel"):
        for shape, label in ((1, "10 s model"), (BIG_B, "large")):
            for dtype in (torch.float32, torch.bfloat16):
                cands = [(f"fft {p} BT={bt} w={w}", ("fft", p, bt, w))
                         for p, bt, w in FFT_CONFIGS[str(dtype).removeprefix("torch.")]]
                out.append({"op": op, "n_fft": 1024, "hop": 256, "B": shape, "dtype": dtype, "label": label,
                            "cands": cands})
    return out


def all_cases():
    return small_istft_cases() + ([] if SMALL_ONLY else large_cases())


# ---------------------------------------------------------------------------------------------------------------
# inputs, runners, references
# ---------------------------------------------------------------------------------------------------------------
def make_inputs(case):
    g = torch.Generator().manual_seed(0)
    dt = case["dtype"]
    n_fft, hop, B = case["n_fft"], case["hop"], case["B"]
    NF = n_fft // 2 + 1
    if case["op"] in ("istft", "istft_exp_sin") and n_fft == 20:
        T = case["T"]
        if case["op"] == "istft":
            mag = (torch.rand(B, NF, T, generator=g) * 2).to(dt).to(DEV)
            ph = ((torch.rand(B, NF, T, generator=g) * 2 - 1) * math.pi).to(dt).to(DEV)
            return {"mag": mag, "ph": ph}
        x = torch.cat([torch.randn(B, NF, T, generator=g) - 1, torch.randn(B, NF, T, generator=g) * 3], 1)
        return {"x": x.to(dt).to(DEV)}
    if case["op"] == "istft":
        T = LARGE_T[B]
        # the spectrum of a real signal (consistent frames), so that the round trip is meaningful
        sig = torch.randn(B, hop * (T - 1), generator=g).to(DEV)
        spec = torch.stft(sig, n_fft, hop, window=torch.hann_window(n_fft, device=DEV), center=True,
                          return_complex=True)
        return {"mag": spec.abs().to(dt).contiguous(), "ph": spec.angle().to(dt).contiguous()}
    x = torch.randn(B, LARGE_N[B], generator=g).to(dt).to(DEV)
    if case["op"] == "mel":
        fb = torch.tensor(K.slaney_mel_filterbank(24000, n_fft, 100), dtype=torch.float32).to(DEV)
        return {"x": x * 0.1, "fb": fb}
    return {"x": x}


def runner(case, cand, inp):
    """(fn() -> output tensor(s), timed fn) of one candidate."""
    op, n_fft, hop = case["op"], case["n_fft"], case["hop"]
    kind = cand[0]
    if op in ("istft", "istft_exp_sin") and n_fft == 20:
        NF = n_fft // 2 + 1
        if op == "istft":
            a, c = inp["mag"], inp["ph"]
            B, _, T = a.shape
            bs, exp_sin = NF * T, False
        else:
            a = inp["x"]
            c = a[:, NF:]
            B, _, T = a.shape
            bs, exp_sin = 2 * NF * T, True
        out = a.new_empty(B, hop * (T - 1))
        return lambda: _istft_small_ola(a, c, bs, B, NF, T, n_fft, hop, exp_sin, out, *cand[1:])
    prec, bt, warps = cand[1:]

    def fft():
        K.FFT_TILES[prec] = (bt, warps)
        if op == "stft":
            return K.stft(inp["x"], n_fft, hop, polar=False, precision=prec)
        if op == "istft":
            return K.istft(inp["mag"], inp["ph"], n_fft, hop, precision=prec)
        return K.mel_spectrogram(inp["x"], inp["fb"], n_fft, hop, pad=384, magnitude=True, precision=prec)
    return fft


def peer_and_reference(case, inp):
    """(the torch peer in the case's dtype as a timed fn, the float64 reference output)."""
    op, n_fft, hop = case["op"], case["n_fft"], case["hop"]
    NF = n_fft // 2 + 1
    if op == "istft_exp_sin":
        x = inp["x"]
        peer = lambda: K.istft_exp_sin_torch(x.float(), n_fft, hop)
        ref = K.istft_exp_sin_torch(x.double(), n_fft, hop)
    elif op == "istft":
        peer = lambda: K.istft_torch(inp["mag"].float(), inp["ph"].float(), n_fft, hop)
        ref = K.istft_torch(inp["mag"].double(), inp["ph"].double(), n_fft, hop)
    elif op == "stft":
        peer = lambda: K.stft_torch(inp["x"].float(), n_fft, hop, polar=False)
        ref = K.stft_torch(inp["x"].double(), n_fft, hop, polar=False)
    else:
        peer = lambda: K.mel_torch(inp["x"].float(), inp["fb"], n_fft, hop, pad=384, magnitude=True)
        ref = K.mel_torch(inp["x"].double(), inp["fb"].double(), n_fft, hop, pad=384, magnitude=True)
    return peer, ref


def nbytes_flops(case):
    it = torch.empty(0, dtype=case["dtype"]).element_size()
    op, n_fft, hop, B = case["op"], case["n_fft"], case["hop"], case["B"]
    NF = n_fft // 2 + 1
    if op in ("istft", "istft_exp_sin"):
        T = case["T"] if "T" in case else LARGE_T[B]
        p = {"shape": (B, 2 * NF if op == "istft_exp_sin" else NF, T), "hop": hop, "exp_sin": op == "istft_exp_sin"}
        return K._istft_bytes(p, it), K._istft_flops(p)
    p = {"shape": (B, LARGE_N[B]), "n_fft": n_fft, "hop": hop, "n_mels": 100}
    if op == "mel":
        p["pad"] = 384
        return K._mel_bytes(p, it), K._mel_flops(p)
    return K._stft_bytes(p, it), K._dft_flops(p)


def _error(out, ref):
    if isinstance(ref, tuple):
        return max(scaled_max_error(o, r) for o, r in zip(out, ref))
    return scaled_max_error(out, ref)


def _warm(job):
    ci, ki = job
    case = all_cases()[ci]
    try:
        runner(case, case["cands"][ki][1], make_inputs(case))()
        if not SMOKE:
            torch.cuda.synchronize()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def warm_all(jobs, warm, t0, budget_s, unfinished=None):
    """{job: None or the error} after warm(job) (a module-level function: it runs in spawned workers on the GPU,
    here on the interpreter), within budget_s of t0. Jobs that did not finish (budget spent, or a worker crashed
    and broke the pool) get `unfinished`: None compiles them on first use, a string reports them instead."""
    errors = {j: None for j in jobs}
    if SMOKE:
        errors = {j: warm(j) for j in jobs}
    else:
        pool = ProcessPoolExecutor(min(14, os.cpu_count() or 4), mp_context=mp.get_context("spawn"))
        futures = {j: pool.submit(warm, j) for j in jobs}
        try:
            for j, fut in futures.items():
                errors[j] = fut.result(timeout=max(1.0, budget_s - (time.time() - t0)))
                print(f"#   warm {j}: {errors[j] or 'ok'} ({time.time() - t0:.0f} s)", flush=True)
        except (BrokenProcessPool, FuturesTimeout) as exc:
            print(f"# parallel compile stopped ({type(exc).__name__}) at {time.time() - t0:.0f} s", flush=True)
            for j, fut in futures.items():
                done = fut.done() and fut.exception() is None
                errors[j] = fut.result() if done else unfinished
        # leaving a `with` block would wait for compiles still running; the workers are ours to stop
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
    device = "cpu interpreter" if SMOKE else torch.cuda.get_device_name()
    print(f"# compiled {len(jobs)} candidate runs in {time.time() - t0:.0f} s "
          f"(torch {torch.__version__}, triton {triton.__version__}, {device})", flush=True)
    return errors


def within_budget(cases, t0, budget_s):
    """(index, case) while budget_s since t0 lasts (the lead's `timeout` would cut the table mid-row)."""
    for ci, case in enumerate(cases):
        if time.time() - t0 > budget_s:
            print(f"# time budget spent: skipped {case['op']} {case['label']} {case['dtype']} and what follows")
            return
        yield ci, case


def main():
    t0 = time.time()
    cases = all_cases()
    jobs = [(ci, ki) for ci, c in enumerate(cases) for ki in range(len(c["cands"]))]
    warm_errors = warm_all(jobs, _warm, t0, WARM_BUDGET_S)
    print(f"{'op':<14}{'shape':<12}{'dtype':<9}{'candidate':<36}{'µs':>9}{'peer µs':>10}{'speedup':>9}"
          f"{'%copyBW':>9}{'TFLOP/s':>9}{'err':>10}")
    for ci, case in within_budget(cases, t0, TOTAL_BUDGET_S):
        inp = make_inputs(case)
        peer, ref = peer_and_reference(case, inp)
        reps = 30 if case["B"] == BIG_B and case["n_fft"] == 1024 else 100
        tp = _time(peer, reps)
        nbytes, flops = nbytes_flops(case)
        tol = tolerance(str(case["dtype"]).removeprefix("torch."), "reduction")
        for ki, (name, cand) in enumerate(case["cands"]):
            head = f"{case['op']:<14}{case['label']:<12}{str(case['dtype'])[6:]:<9}{name:<36}"
            if warm_errors[(ci, ki)]:
                print(head + "  FAILED " + warm_errors[(ci, ki)], flush=True)
                continue
            fn = runner(case, cand, inp)
            err = _error(fn(), ref)
            if not err <= tol:
                print(head + f"  WRONG err={err:.2e} > tol {tol:.0e}", flush=True)
                continue
            t = _time(fn, reps)
            print(head + f"{t:9.1f}{tp:10.1f}{tp / t:9.2f}{nbytes / t / 1e3 / COPY_GBS * 100:8.1f}%"
                  f"{flops / t / 1e6:9.1f}{err:10.1e}", flush=True)
        del inp, ref
        if not SMOKE:
            torch.cuda.empty_cache()
    print(f"# total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
