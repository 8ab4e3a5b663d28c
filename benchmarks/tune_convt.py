"""Transposed conv on the tap kernel: one phase per program (stores `stride` apart) against all phases of a
time tile in one program, interleaved in registers and stored contiguously, at a few tiles, beside cuDNN.

    PYTHONPATH=. timeout 150 python3 benchmarks/tune_convt.py [--cpu-smoke]

Every candidate is first run in a worker process (one candidate per process, so a kernel that faults loses
only its own CUDA context) and checked against F.conv_transpose1d in float64 (scaled max error, the tolerance
table's reduction row); a wrong or failing candidate is reported and not timed. Timing runs in this process,
one kernel at a time, with time_cuda (L2 flushed). Columns: err, µs (median), cuDNN µs (no TF32 for float32),
speedup (cuDNN / ours), GB/s of the minimal traffic (x, weight, y once), TFLOP/s.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time

import torch
import torch.nn.functional as F

SMOKE = "--cpu-smoke" in sys.argv  # the script itself on the CPU interpreter at shrunken shapes
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"
DEVICE = "cpu" if SMOKE else "cuda"
CHECK_DEADLINE_S = 65
TOTAL_BUDGET_S = 95

# the conv1d_transpose bench shapes of tilewave/kernels/conv.py, as tune_conv.py (beside this script) lists them
from tune_conv import TRANSPOSED as SHAPES, timed_us  # noqa: E402

LRELU_UP = ("lrelu+up x10 512->256 k20 L800",
            dict(C_in=512, C_out=256, L=800, K=20, stride=10, padding=5, act="leaky_relu"))

# candidates: (name, mode, tile (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) or None = the launcher's own,
# persistent override or None = the launcher's rule). mode "phase": one phase per program; "il": interleaved;
# "auto": the launcher as shipped (its own form, tile and persistence).
C16 = [("phase (main)", "phase", None, None),
       ("auto (shipped)", "auto", None, None),
       ("il 128x128x64 w8 s4", "il", (128, 128, 64, 8, 4), False),
       ("il 128x128x64 w8 s4 pers", "il", (128, 128, 64, 8, 4), True),
       ("il 64x128x64 w4 s4", "il", (64, 128, 64, 4, 4), False),
       ("il 128x256x64 w8 s3", "il", (128, 256, 64, 8, 3), False)]
C16_SHORT = C16[:3] + C16[4:5]
CX3 = [("phase (main)", "phase", None, None),
       ("auto (shipped)", "auto", None, None),
       ("il 64x128x32 w4 s4", "il", (64, 128, 32, 4, 4), False),
       ("il 64x64x32 w4 s4", "il", (64, 64, 32, 4, 4), False)]
CFUSED = [("phase (main)", "phase", None, None),
          ("auto (shipped)", "auto", None, None),
          ("il 128x128x64 w8 s4", "il", (128, 128, 64, 8, 4), False),
          ("il 64x128x64 w4 s4", "il", (64, 128, 64, 4, 4), False)]


def rows():
    """(label, params, dtype name, precision, candidates), most important first."""
    out = [(label, p, "bfloat16", "ieee", C16) for label, p in SHAPES]
    out += [(*SHAPES[i], "float16", "ieee", C16_SHORT) for i in (1, 6)]
    out += [(*SHAPES[i], "float32", "tf32x3", CX3) for i in (2, 7)]
    out.append((*LRELU_UP, "bfloat16", "ieee", CFUSED))
    if SMOKE:  # shrunken shapes, float16 for bfloat16 (the interpreter cannot multiply bfloat16)
        out = [(lab, {**p, "C_in": min(p["C_in"], 32), "C_out": min(p["C_out"], 32), "L": min(p["L"], 24)},
                "float16" if dt == "bfloat16" else dt, prec, c[:3]) for lab, p, dt, prec, c in out[::4]]
    return out


def make_inputs(p, dtype, seed=0):
    g = torch.Generator(DEVICE).manual_seed(seed)
    C_in, C_out, K, s = p["C_in"], p["C_out"], p["K"], p["stride"]
    x = torch.randn(1, C_in, p["L"], generator=g, device=DEVICE).to(dtype)
    w = (torch.randn(C_in, C_out, K, generator=g, device=DEVICE) * (C_in * -(-K // s)) ** -0.5).to(dtype)
    b = (torch.randn(C_out, generator=g, device=DEVICE) * 0.5).to(dtype)
    return x, w, b


def reference(p, x, w, b):
    xa = x.double()
    if p.get("act") == "leaky_relu":
        xa = F.leaky_relu(xa, 0.1)
    return F.conv_transpose1d(xa, w.double(), b.double(), p["stride"], p.get("padding", 0))


_ORIG = {}


def _init():
    from tilewave.kernels import conv as C
    _ORIG.update(INTERLEAVED_STRIDES=C.INTERLEAVED_STRIDES, INTERLEAVED_CONFIGS=C.INTERLEAVED_CONFIGS,
                 TAP_PERSISTENT=C.TAP_PERSISTENT, INTERLEAVED_MAX_EXTRA_MACS=C.INTERLEAVED_MAX_EXTRA_MACS)


def restore():
    from tilewave.kernels import conv as C
    for k, v in _ORIG.items():
        setattr(C, k, v)


def candidate_fn(cand, prec, p, x, w, b):
    """A no-argument callable running the candidate (module settings applied inside each call)."""
    from tilewave.kernels import conv as C
    _, mode, tile, persistent = cand
    cls = C._tap_class(x.dtype, prec)
    L_out = (p["L"] - 1) * p["stride"] - 2 * p.get("padding", 0) + p["K"]
    out = torch.empty(1, p["C_out"], L_out, dtype=x.dtype, device=x.device)
    act = p.get("act", "none")

    def setup():
        if mode == "auto":  # the launcher as shipped
            return
        strides = frozenset(range(2, 17)) if mode == "il" else frozenset()
        C.INTERLEAVED_STRIDES = {c: strides for c in _ORIG["INTERLEAVED_STRIDES"]}
        C.INTERLEAVED_MAX_EXTRA_MACS = float("inf")
        if tile is not None:
            C.INTERLEAVED_CONFIGS = {**_ORIG["INTERLEAVED_CONFIGS"], cls: (C.GemmConfig(*tile),)}
        if persistent is not None:
            C.TAP_PERSISTENT = {**_ORIG["TAP_PERSISTENT"], cls: 1 if persistent else 0}

    def run():
        setup()
        try:
            return C.conv1d_fused(x, w, b, p["stride"], p.get("padding", 0), 1, 1, transposed=True, act=act,
                                  slope=0.1, precision=prec, out=out)
        finally:
            restore()
    return run


def tol_for(dtype_name, prec):
    from tilewave.spec.tolerance import tolerance
    return tolerance("float32" if dtype_name == "float32" else dtype_name, "reduction")


def check_candidate(rows_, cand):
    """Worker: run one candidate on each of its rows against the float64 reference: [(error, message)]."""
    _init()
    out = []
    for label, p, dt, prec, _ in rows_:
        try:
            x, w, b = make_inputs(p, getattr(torch, dt))
            y = candidate_fn(cand, prec, p, x, w, b)()
            if not SMOKE:
                torch.cuda.synchronize()
            ref = reference(p, x, w, b)
            scale = max(1.0, ref.abs().max().item())
            err = (y.double() - ref).abs().max().item() / scale if torch.isfinite(y).all() else float("inf")
            out.append((err, ""))
        except Exception as exc:  # a candidate that does not compile or launch is reported, not timed
            msg = str(exc).splitlines()[0][:110] if str(exc) else ""
            out.append((float("inf"), f"{type(exc).__name__}: {msg}"))
            if "CUDA" in msg or "illegal" in msg:
                break  # the context is gone: the remaining rows would fail for the same reason
    while len(out) < len(rows_):
        out.append((float("inf"), "not run: an earlier row lost the CUDA context"))
    return out


def main():
    t_start = time.time()
    all_rows = rows()
    print(f"# {torch.cuda.get_device_name() if not SMOKE else 'cpu smoke'}  torch {torch.__version__}  triton "
          f"{__import__('triton').__version__}  rows {len(all_rows)}", flush=True)
    # one task per (candidate list, candidate): a candidate's kernels compile in one worker, in parallel with
    # the others; a worker lives for one task, so a faulting kernel spoils no other candidate
    groups: dict[int, list[int]] = {}
    for i, row in enumerate(all_rows):
        groups.setdefault(id(row[4]), []).append(i)
    tasks = [(idx, cand) for idx in groups.values() for cand in all_rows[idx[0]][4]]
    if SMOKE:
        results = [check_candidate([all_rows[i] for i in idx], cand) for idx, cand in tasks]
        pending = None
    else:
        pool = mp.get_context("spawn").Pool(min(15, os.cpu_count() or 4), maxtasksperchild=1)
        pending = [pool.apply_async(check_candidate, ([all_rows[i] for i in idx], cand)) for idx, cand in tasks]
        deadline = time.time() + CHECK_DEADLINE_S
        while time.time() < deadline and not all(r.ready() for r in pending):
            time.sleep(0.2)
        results = []
        for r in pending:
            res = None
            if r.ready():
                try:
                    res = r.get(0)
                except Exception as exc:
                    res = repr(exc)[:120]
            results.append(res)
        # round 1 timed its first rows while the workers were still exiting (CPU-bound launches, inflated
        # numbers): wait for them
        pool.terminate()
        pool.join()
        time.sleep(2)
    checks = [{} for _ in all_rows]
    for (idx, cand), res in zip(tasks, results):
        for k, i in enumerate(idx):
            if isinstance(res, list):
                checks[i][cand[0]] = res[k]
            else:
                checks[i][cand[0]] = (float("inf"), res or "check did not finish (slow compile, hang or crash)")
    print(f"# compile + check: {time.time() - t_start:.0f} s", flush=True)
    _init()
    print(f"{'shape':<34} {'dtype/prec':<16} {'candidate':<26} {'err':>8} {'us':>8} {'cudnn':>8} {'x':>5} "
          f"{'GB/s':>6} {'TFLOP/s':>7}")
    best_lines = []
    for row, check in zip(all_rows, checks):
        label, p, dt, prec, cands = row
        dtype = getattr(torch, dt)
        x, w, b = make_inputs(p, dtype)
        L_out = (p["L"] - 1) * p["stride"] - 2 * p.get("padding", 0) + p["K"]
        nbytes = x.element_size() * (x.numel() + w.numel() + p["C_out"] * L_out)
        fl = 2 * p["C_in"] * p["L"] * p["C_out"] * p["K"]

        def peer(x=x, w=w, b=b, p=p):
            xa = F.leaky_relu(x, 0.1) if p.get("act") == "leaky_relu" else x
            return F.conv_transpose1d(xa, w, b, p["stride"], p.get("padding", 0))
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            peer_us = timed_us(peer)
        best = None
        for cand in cands:
            err, msg = check[cand[0]]
            head = f"{label:<34} {dt + '/' + prec:<16} {cand[0]:<26} {err:8.1e}"
            tol = tol_for(dt, prec)
            if msg or not err <= tol:
                print(f"{head} {'WRONG' if not msg else msg} (tol {tol:.0e})", flush=True)
                continue
            try:
                us = timed_us(candidate_fn(cand, prec, p, x, w, b))
            except Exception as exc:
                print(f"{head} {type(exc).__name__}: {str(exc)[:80]}", flush=True)
                continue
            print(f"{head} {us:8.1f} {peer_us:8.1f} {peer_us / us:5.2f} {nbytes / us / 1e3:6.0f} "
                  f"{fl / us / 1e6:7.1f}", flush=True)
            if best is None or us < best[1]:
                best = (cand[0], us)
        if best:
            best_lines.append(f"{label:<34} {dt + '/' + prec:<16} best {best[0]:<26} {best[1]:8.1f} us  "
                              f"cudnn {peer_us:8.1f}  x{peer_us / best[1]:.2f}")
        if time.time() - t_start > TOTAL_BUDGET_S:
            print("# stopping: time budget", flush=True)
            break
    print("# best per row")
    for line in best_lines:
        print(line)
    print(f"# total {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
