r"""The small inverse STFT (n_fft 20, hop 5: Kokoro's generator tail) on the GPU: the frame-vector kernel
(_istft_ola_kernel, the launcher's default) against the rows kernel (_istft_rows_kernel) in a few configurations.

PYTHONPATH=. python3 benchmarks/tune_spectral3.py

Nsight stalls for the rows kernel (if there is time; gpu_diag.sh's `stalls` profiles registry launchers, and the
rows kernel is not the default yet), the large exp_sin shape in float32, one launch:
    ncu --clock-control none -k regex:_istft_rows --launch-skip 2 --launch-count 1 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --section InstructionStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      python3 benchmarks/tune_spectral3.py --once "rows F=4 R=32 w=1 split"

Every candidate is first checked against torch.istft in float64 (the tolerance table's 'reduction' row for its
storage dtype); a candidate over tolerance is reported, not timed. The rows kernel without a phase range
reduction ('no-reduce') is also checked on phases 100x wider (|x| up to ~1500 rad). 'split': the inverse DFT
from even- and odd-bin partial sums of a quarter of the taps (~377 SASS instructions per frame for exp_sin float32;
'direct DFT' ~442, the current kernel ~1084). F=3: 3 frames per thread (15 of 16 stored columns used, 96 registers,
~403 instructions per frame, 4-byte stores). Kernels compile first in
parallel worker processes (Triton's on-disk cache), then are timed one by one with time_cuda.
Columns: µs, torch peer µs (cuFFT, same dtype), speedup over the peer, speedup over the current kernel, % of copy
bandwidth (4,279 GB/s) on the minimal bytes (spectrum read once, signal written once).
"""
from __future__ import annotations

import math
import os
import sys
import time

import torch
import triton

from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import spectral as K

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_spectral import _time, warm_all, within_budget  # noqa: E402

COPY_GBS = 4279.0
WARM_BUDGET_S, TOTAL_BUDGET_S = 70.0, 115.0
# TUNE_SMOKE=1 TRITON_INTERPRET=1: the same script on the CPU interpreter at tiny shapes (checks the plumbing)
SMOKE = os.environ.get("TUNE_SMOKE") == "1"
DEV = "cpu" if SMOKE else "cuda"
N_FFT, HOP = 20, 5
NF = N_FFT // 2 + 1
# (op, batch, frames, label)
SHAPES = [("istft_exp_sin", 16, 96001, "large"), ("istft", 16, 96001, "large"), ("istft_exp_sin", 1, 48001, "10 s")]
DTYPES = (torch.float32, torch.bfloat16)
if SMOKE:  # the interpreter pays per tl op: one small shape per op
    SHAPES, DTYPES = [("istft_exp_sin", 2, 150, "large"), ("istft", 1, 70, "large")], (torch.float32,)
# name -> ("vectors", frames, warps, mode, chunk) | ("rows", F, R, warps, reduce, split). Round 1 (04:50) timed out
# compiling 6 candidates x 6 cases (~15-20 s per rows variant here, 255-register variants longer): now one compile
# job per (candidate, op, dtype), and the two extra variants only for exp_sin float32 (14 jobs, 14 workers).
CANDIDATES = {
    "vectors BT=256 w=4 (current)": ("vectors", 256, 4, 1, 4096),
    "rows F=4 R=32 w=1 split": ("rows", 4, 32, 1, True, True),
    "rows F=4 R=32 w=1 split no-reduce": ("rows", 4, 32, 1, False, True),
    "rows F=4 R=32 w=1 direct DFT": ("rows", 4, 32, 1, True, False),
    "rows F=3 R=32 w=1 split": ("rows", 3, 32, 1, True, True),
}
EXP_SIN_F32_ONLY = {"rows F=4 R=32 w=1 direct DFT", "rows F=3 R=32 w=1 split"}


def all_cases():
    return [{"op": op, "B": B, "T": T, "label": label, "dtype": dt}
            for op, B, T, label in SHAPES for dt in DTYPES]


def make_inputs(case, phase_scale=1.0):
    g = torch.Generator().manual_seed(0)
    B, T, dt = case["B"], case["T"], case["dtype"]
    if case["op"] == "istft":
        mag = (torch.rand(B, NF, T, generator=g) * 2).to(dt).to(DEV)
        ph = ((torch.rand(B, NF, T, generator=g) * 2 - 1) * math.pi * phase_scale).to(dt).to(DEV)
        return {"mag": mag, "ph": ph}
    x = torch.cat([torch.randn(B, NF, T, generator=g) - 1, torch.randn(B, NF, T, generator=g) * 3 * phase_scale], 1)
    return {"x": x.to(dt).to(DEV)}


def _operands(case, inp):
    """(a, c, batch stride, exp_sin) as the launcher passes them."""
    if case["op"] == "istft":
        a = inp["mag"]
        return a, inp["ph"], NF * a.shape[-1], False
    a = inp["x"]
    return a, a[:, NF:], 2 * NF * a.shape[-1], True


def runner(case, cand, inp):
    a, c, bs, exp_sin = _operands(case, inp)
    B, T = a.shape[0], a.shape[-1]
    out = a.new_empty(B, HOP * (T - 1))
    if cand[0] == "rows":
        return lambda: K.istft_rows_launch(a, c, out, bs, T, N_FFT, HOP, N_FFT, exp_sin, cand[1:])
    _, bt, warps, mode, chunk = cand
    basis = K._bases(N_FFT, N_FFT, str(a.device))
    ov = triton.cdiv(N_FFT, HOP)
    rows = triton.cdiv(out.shape[-1] + N_FFT // 2, HOP)

    def vectors():
        K._istft_ola_kernel[(B, triton.cdiv(rows, bt - ov + 1))](
            a, c, basis["even"], basis["odd"], basis["win"], basis["wsq"], out, T, out.shape[-1], bs,
            N_FFT=N_FFT, HOP=HOP, NF=NF, EXP_SIN=exp_sin, FAST=not SMOKE, MODE=mode, BT=bt,
            S_P=min(chunk, triton.next_power_of_2((bt - ov + 1) * HOP)), num_warps=warps)
        return out
    return vectors


def peer_and_reference(case, inp):
    if case["op"] == "istft_exp_sin":
        x = inp["x"]
        return (lambda: K.istft_exp_sin_torch(x.float(), N_FFT, HOP)), K.istft_exp_sin_torch(x.double(), N_FFT, HOP)
    mag, ph = inp["mag"], inp["ph"]
    return ((lambda: K.istft_torch(mag.float(), ph.float(), N_FFT, HOP)),
            K.istft_torch(mag.double(), ph.double(), N_FFT, HOP))


def nbytes(case):
    p = {"shape": (case["B"], 2 * NF if case["op"] == "istft_exp_sin" else NF, case["T"]), "hop": HOP,
         "exp_sin": case["op"] == "istft_exp_sin"}
    return K._istft_bytes(p, torch.empty(0, dtype=case["dtype"]).element_size())


def _candidates(ci):
    case = all_cases()[ci]
    main = case["op"] == "istft_exp_sin" and case["dtype"] == torch.float32
    return [n for n in CANDIDATES if main or n not in EXP_SIN_F32_ONLY]


def _kernel_key(case, name):
    # what one compile covers: shapes only change runtime ints of the same specialisation
    return name, case["op"], case["dtype"]


def _warm(job):
    ci, name = job
    case = all_cases()[ci]
    try:
        runner(case, CANDIDATES[name], make_inputs(case))()
        if not SMOKE:
            torch.cuda.synchronize()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def once(name):
    """Five launches of one candidate at the large exp_sin float32 shape (for a profiler)."""
    case = all_cases()[0]
    fn = runner(case, CANDIDATES[name], make_inputs(case))
    for _ in range(5):
        fn()
    torch.cuda.synchronize()


def main():
    if sys.argv[1:2] == ["--once"]:
        return once(sys.argv[2])
    t0 = time.time()
    cases = all_cases()
    first = {}
    for ci, case in enumerate(cases):
        for name in _candidates(ci):
            first.setdefault(_kernel_key(case, name), (ci, name))
    warmed = warm_all(list(first.values()), _warm, t0, WARM_BUDGET_S, unfinished="not compiled within the budget")
    print(f"{'op':<14}{'shape':<7}{'dtype':<9}{'candidate':<34}{'µs':>8}{'peer µs':>9}{'x peer':>8}{'x cur':>7}"
          f"{'%copyBW':>9}{'err':>10}")
    for ci, case in within_budget(cases, t0, TOTAL_BUDGET_S):
        inp = make_inputs(case)
        peer, ref = peer_and_reference(case, inp)
        wide = make_inputs(case, phase_scale=100.0)
        _, wide_ref = peer_and_reference(case, wide)
        tp = _time(peer, 50)
        tol = tolerance(str(case["dtype"]).removeprefix("torch."), "reduction")
        t_cur = None
        for name in _candidates(ci):
            cand = CANDIDATES[name]
            head = f"{case['op']:<14}{case['label']:<7}{str(case['dtype'])[6:]:<9}{name:<34}"
            if warmed[first[_kernel_key(case, name)]]:
                print(head + "  FAILED " + warmed[first[_kernel_key(case, name)]], flush=True)
                continue
            err = scaled_max_error(runner(case, cand, inp)(), ref)
            wide_err = scaled_max_error(runner(case, cand, wide)(), wide_ref) if cand[0] == "rows" else 0.0
            if not err <= tol:
                print(head + f"  WRONG err={err:.2e} (tol {tol:.0e})", flush=True)
                continue
            t = _time(runner(case, cand, inp), 100)
            t_cur = t if t_cur is None and cand[0] == "vectors" else t_cur
            wide_note = "" if wide_err <= tol else f"  WRONG on 100x phases: err={wide_err:.2e}"
            print(head + f"{t:8.1f}{tp:9.1f}{tp / t:8.2f}{(t_cur or t) / t:7.2f}"
                  f"{nbytes(case) / t / 1e3 / COPY_GBS * 100:8.1f}%{max(err, wide_err):10.1e}{wide_note}", flush=True)
        del inp, ref, wide, wide_ref
        if not SMOKE:
            torch.cuda.empty_cache()
    print(f"# total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
