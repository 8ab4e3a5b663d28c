"""Conv design/tile sweep on the GPU: the gather kernel (_conv_gemm_kernel, "old") against the tap-major kernel
(_conv_tap_kernel) with TMA descriptors or plain pointer loads at a few tiles, beside cuDNN at the same precision.

    PYTHONPATH=. timeout 150 python3 benchmarks/tune_conv.py [--quick | --ieee]

Every candidate is first checked against a float64 conv of the same inputs (scaled max error, the tolerance
table's reduction row for the precision); a wrong or failing candidate is reported and not timed. Compiling
and checking runs in worker processes (they fill Triton's on-disk cache), timing in this one, one kernel at
a time. Columns: µs (median), cuDNN µs, speedup (cuDNN / ours), TFLOP/s, % of the precision's measured peak.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time

import torch
import torch.nn.functional as F

# --cpu-smoke: the whole script on the CPU interpreter at shrunken shapes (checks this script, not speed)
SMOKE = "--cpu-smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"
DEVICE = "cpu" if SMOKE else "cuda"
PEAK_TFLOPS = {"bfloat16": 770, "float16": 770, "tf32": 405, "tf32x3": 405, "ieee": 51}
REPS = 20

# (label, params): stride-1 convs and transposed convs of conv.py's bench list (the gather kernel keeps
# the strided noise conv, the direct kernel the tiny ones).
CONV = [
    ("Kokoro resblock 256ch k11 d5 L8000", dict(C_in=256, C_out=256, L=8000, K=11, dilation=5, padding=25)),
    ("Kokoro resblock 128ch k7 d3 L48000", dict(C_in=128, C_out=128, L=48000, K=7, dilation=3, padding=9)),
    ("Kokoro conv_post 128->22 k7 L48000", dict(C_in=128, C_out=22, L=48000, K=7, padding=3)),
    ("Kokoro decoder 1090->1024 k3 L800", dict(C_in=1090, C_out=1024, L=800, K=3, padding=1)),
    ("BigVGAN conv_pre 100->1536 k7 L938", dict(C_in=100, C_out=1536, L=938, K=7, padding=3)),
    ("BigVGAN resblock 768ch k7 d3 L3752", dict(C_in=768, C_out=768, L=3752, K=7, dilation=3, padding=9)),
    ("BigVGAN resblock 96ch k11 d5 L60032", dict(C_in=96, C_out=96, L=60032, K=11, dilation=5, padding=25)),
    ("decoder conv_in 1024->1536 k7 L500", dict(C_in=1024, C_out=1536, L=500, K=7, padding=3)),
    ("decoder residual 384ch k7 d9 L19840", dict(C_in=384, C_out=384, L=19840, K=7, dilation=9, padding=27)),
    ("large 1536ch k7 L16384", dict(C_in=1536, C_out=1536, L=16384, K=7, padding=3)),
]
TRANSPOSED = [
    ("Kokoro up x10 512->256 k20 L800", dict(C_in=512, C_out=256, L=800, K=20, stride=10, padding=5)),
    ("Kokoro up x6 256->128 k12 L8000", dict(C_in=256, C_out=128, L=8000, K=12, stride=6, padding=3)),
    ("BigVGAN up x4 1536->768 k8 L938", dict(C_in=1536, C_out=768, L=938, K=8, stride=4, padding=2)),
    ("BigVGAN up x2 384->192 k4 L15008", dict(C_in=384, C_out=192, L=15008, K=4, stride=2, padding=1)),
    ("BigVGAN up x2 48->24 k4 L120064", dict(C_in=48, C_out=24, L=120064, K=4, stride=2, padding=1)),
    ("decoder up x8 1536->768 k16 L500", dict(C_in=1536, C_out=768, L=500, K=16, stride=8)),
    ("decoder up x3 192->96 k6 L80000", dict(C_in=192, C_out=96, L=80000, K=6, stride=3)),
    ("large up x8 1024->512 k16 L8192", dict(C_in=1024, C_out=512, L=8192, K=16, stride=8)),
]
FUSED = [  # conv1d_fused: snake fused in the tap kernel's registers vs one snake pass first
    ("Kokoro snake+k11 d5+res 256ch L8000", dict(C_in=256, C_out=256, L=8000, K=11, dilation=5, padding=25,
                                                  act="snake", residual=True)),
    ("Kokoro snake+k3+res 128ch L48000", dict(C_in=128, C_out=128, L=48000, K=3, padding=1, act="snake",
                                              residual=True)),
    ("decoder snake+k1+res 384ch L19840", dict(C_in=384, C_out=384, L=19840, K=1, act="snake", residual=True)),
    ("Kokoro lrelu+up x10 512->256 L800", dict(C_in=512, C_out=256, L=800, K=20, stride=10, padding=5,
                                               act="leaky_relu", transposed=True)),
]

# candidates: (name, mode, (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)); mode "old" = the gather kernel with
# the launcher's own tile choice.
# "auto": the launcher as shipped (its own tile, persistence and fusion choices)
T16 = [("old", "old", None),
       ("auto", "auto", None),
       ("tma 128x256x64 w8 s3", "tma", (128, 256, 64, 8, 3)),
       ("tma 128x128x64 w8 s4", "tma", (128, 128, 64, 8, 4)),
       ("persistent tma 128x256x64 w8 s3", "pers-tma", (128, 256, 64, 8, 3))]
T32 = [("old", "old", None),
       ("auto", "auto", None),
       ("tma 128x256x32 w8 s3", "tma", (128, 256, 32, 8, 3)),
       ("tma 64x128x32 w4 s4", "tma", (64, 128, 32, 4, 4)),
       ("persistent tma 128x256x32 w8 s3", "pers-tma", (128, 256, 32, 8, 3))]
T16_FP16 = [T16[i] for i in (0, 1)]
T32X3 = [T32[i] for i in (0, 1, 3)] + [("tma 128x128x32 w8 s3", "tma", (128, 128, 32, 8, 3))]
# exact float32 (FMA dot): the tap kernel's rectangles (pointer loads) against the gather kernel
TIEEE = [("old", "old", None),
         ("ptr 64x64x16 w4 s2", "pointer", (64, 64, 16, 4, 2)),
         ("ptr 64x128x16 w4 s2", "pointer", (64, 128, 16, 4, 2))]
TFUSED = [("old", "old", None),
          ("auto", "auto", None)]
# --ieee (session 3): the gather kernel's exact-float32 tile, now (64, 64, 16, 4, 2) / (32, 64, 16, 4, 2), against
# larger register tiles (more FMAs per loaded element) and deeper reductions, at every model shape
TIEEE_SWEEP = [("auto", "auto", None),
               ("gather 64x64x16 w4 s2", "gather", (64, 64, 16, 4, 2)),
               ("gather 128x64x16 w8 s2", "gather", (128, 64, 16, 8, 2)),
               ("gather 64x128x16 w8 s2", "gather", (64, 128, 16, 8, 2)),
               ("gather 128x128x16 w8 s2", "gather", (128, 128, 16, 8, 2)),
               ("gather 64x64x32 w4 s3", "gather", (64, 64, 32, 4, 3)),
               ("gather 32x64x16 w2 s2", "gather", (32, 64, 16, 2, 2))]


def _shrunk(p):
    return {**p, "C_in": min(p["C_in"], 32), "C_out": min(p["C_out"], 32), "L": min(p["L"], 40)}


def rows(quick: bool):
    """(kind, label, params, dtype name, precision, candidates), most important first."""
    out = []
    shapes = [("conv", *c) for c in CONV] + [("transposed", *t) for t in TRANSPOSED]
    if "--ieee" in sys.argv:
        return [(kind, label, p, "float32", "ieee", TIEEE_SWEEP) for kind, label, p in shapes
                if not label.startswith("large")]
    for dt, prec, cands in (("bfloat16", "ieee", T16), ("float32", "tf32", T32), ("float32", "tf32x3", T32X3)):
        out += [(kind, label, p, dt, prec, cands) for kind, label, p in shapes]
        if quick:
            break
    if not quick:
        for i in (0, 5, 9):
            out.append(("conv", *CONV[i], "float16", "ieee", T16_FP16))
        for i in (2, 5):
            out.append(("transposed", *TRANSPOSED[i], "float16", "ieee", T16_FP16))
        for i in (0, 5, 9):
            out.append(("conv", *CONV[i], "float32", "ieee", TIEEE))
        for label, p in FUSED:
            out.append(("fused", label, p, "bfloat16", "ieee", TFUSED))
    if SMOKE:
        out = [(k, lab, _shrunk(p), "float16" if dt == "bfloat16" else dt, prec, c)
               for k, lab, p, dt, prec, c in out[::9] + [r for r in out if r[4] == "ieee" and r[3] == "float32"][:1]]
    return out


def make_inputs(kind, p, dtype, seed=0):
    g = torch.Generator(DEVICE).manual_seed(seed)
    transposed = kind == "transposed" or p.get("transposed", False)
    C_in, C_out, K, s = p["C_in"], p["C_out"], p["K"], p.get("stride", 1)
    fan_in = C_in * (-(-K // s) if transposed else K)
    x = torch.randn(1, C_in, p["L"], generator=g, device=DEVICE).to(dtype)
    w_shape = (C_in, C_out, K) if transposed else (C_out, C_in, K)
    w = (torch.randn(w_shape, generator=g, device=DEVICE) * fan_in ** -0.5).to(dtype)
    b = (torch.randn(C_out, generator=g, device=DEVICE) * 0.5).to(dtype)
    kw = dict(stride=s, padding=p.get("padding", 0), dilation=p.get("dilation", 1))
    extra = {}
    if kind == "fused":
        extra = dict(act=p["act"], transposed=transposed, slope=0.1)
        if p["act"] == "snake":
            extra["alpha"] = (torch.rand(C_in, generator=g, device=DEVICE) + 0.1).to(dtype)
        if p.get("residual"):
            L_out = (p["L"] + 2 * kw["padding"] - kw["dilation"] * (K - 1) - 1) // s + 1
            extra["residual"] = torch.randn(1, C_out, L_out, generator=g, device=DEVICE).to(dtype)
    return x, w, b, kw, extra


def reference(kind, x, w, b, kw, extra):
    from tilewave.kernels import conv as C
    transposed = kind == "transposed" or extra.get("transposed", False)
    act = extra.get("act", "none")
    alpha = extra.get("alpha")
    xa = C.activate_torch(x.double(), act, extra.get("slope", 0.0), None if alpha is None else alpha.double())
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        if transposed:
            y = F.conv_transpose1d(xa, w.double(), b.double(), kw["stride"], kw["padding"], 0, 1, kw["dilation"])
        else:
            y = F.conv1d(xa, w.double(), b.double(), kw["stride"], kw["padding"], kw["dilation"])
    if "residual" in extra:
        y = y + extra["residual"].double()
    return y


def candidate_fn(kind, cand, prec, x, w, b, kw, extra):
    """A no-argument callable running the candidate (module settings are applied inside each call)."""
    from tilewave.kernels import conv as C
    name, mode, tile = cand
    persistent = mode.startswith("pers-")
    mode = mode.removeprefix("pers-")
    cls = "ieee" if x.dtype == torch.float32 and prec == "ieee" else C._tap_class(x.dtype, prec)

    def setup():
        if mode == "auto":
            return
        if mode == "old":
            C.uses_tap_kernel = lambda *a: False
            return
        if mode == "gather":
            C.uses_tap_kernel = lambda *a: False
            C.GEMM_CONFIGS = {**_ORIG["GEMM_CONFIGS"], "ieee": (C.GemmConfig(*tile),)}
            return
        C.uses_tap_kernel = lambda dtype, precision, transposed, stride: transposed or stride == 1
        C.tap_kernel_fits = lambda t, groups: True
        C.tap_mode = (lambda t: "pointer") if mode == "pointer" else (lambda t: "tma")
        C.TAP_PERSISTENT = {c: int(persistent) for c in ("16bit", "tf32", "tf32x3", "ieee")}
        C.DEVICE_DESCRIPTORS = mode != "tma-hostdesc"
        C.TAP_CONFIGS = {**_ORIG["TAP_CONFIGS"], cls: (C.GemmConfig(*tile),)}

    transposed = kind == "transposed" or extra.get("transposed", False)
    out = torch.empty_like(reference_shape(kind, x, w, kw, extra), dtype=x.dtype)
    fkw = {k: v for k, v in extra.items() if k != "transposed"}

    def run():
        setup()
        try:
            return C.conv1d_fused(x, w, b, kw["stride"], kw["padding"], kw["dilation"], 1, transposed=transposed,
                                  precision=prec, out=out, **fkw)
        finally:
            restore()
    return run


def reference_shape(kind, x, w, kw, extra):
    transposed = kind == "transposed" or extra.get("transposed", False)
    L, K, s, p, d = x.shape[2], w.shape[2], kw["stride"], kw["padding"], kw["dilation"]
    if transposed:
        return torch.empty(1, w.shape[1], (L - 1) * s - 2 * p + d * (K - 1) + 1, device=DEVICE)
    return torch.empty(1, w.shape[0], (L + 2 * p - d * (K - 1) - 1) // s + 1, device=DEVICE)


_ORIG = {}


def restore():
    from tilewave.kernels import conv as C
    for k, v in _ORIG.items():
        setattr(C, k, v)


def _init():
    from tilewave.kernels import conv as C
    _ORIG.update(uses_tap_kernel=C.uses_tap_kernel, tap_kernel_fits=C.tap_kernel_fits, tap_mode=C.tap_mode,
                 TAP_CONFIGS=C.TAP_CONFIGS, GEMM_CONFIGS=C.GEMM_CONFIGS,
                 TAP_PERSISTENT=C.TAP_PERSISTENT, DEVICE_DESCRIPTORS=C.DEVICE_DESCRIPTORS)


def tol_for(dtype_name, prec):
    from tilewave.spec.tolerance import tolerance
    if dtype_name == "float32":
        return tolerance("tf32" if prec == "tf32" else "float32", "reduction")
    return tolerance(dtype_name, "reduction")


def check_candidate(rows_, cand):
    """Worker: compile and run one candidate on each row (a dtype/precision group), against a float64 conv;
    returns [(error, message)] per row. One candidate per task, so no two workers compile the same kernel."""
    _init()
    out = []
    for kind, label, p, dt, prec, cands in rows_:
        try:
            x, w, b, kw, extra = make_inputs(kind, p, getattr(torch, dt))
            y = candidate_fn(kind, cand, prec, x, w, b, kw, extra)()
            ref = reference(kind, x, w, b, kw, extra)
            scale = max(1.0, ref.abs().max().item())
            err = (y.double() - ref).abs().max().item() / scale if torch.isfinite(y).all() else float("inf")
            out.append((err, ""))
        except Exception as exc:  # a candidate that does not compile or launch is reported, not timed
            out.append((float("inf"), f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"))
    return out


def flops(kind, p):
    transposed = kind == "transposed" or p.get("transposed", False)
    if transposed:
        return 2 * p["C_in"] * p["L"] * p["C_out"] * p["K"]
    L_out = (p["L"] + 2 * p.get("padding", 0) - p.get("dilation", 1) * (p["K"] - 1) - 1) // p.get("stride", 1) + 1
    return 2 * p["C_out"] * L_out * p["C_in"] * p["K"]


def peer_fn(kind, x, w, b, kw, extra):
    from tilewave.kernels import conv as C
    transposed = kind == "transposed" or extra.get("transposed", False)
    fkw = {k: v for k, v in extra.items() if k != "transposed"}
    return lambda: C.conv1d_fused_torch(x, w, b, kw["stride"], kw["padding"], kw["dilation"], 1,
                                        transposed=transposed, **fkw)


def timed_us(fn):
    if SMOKE:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e6
    from tilewave.harness.timing import time_cuda
    return time_cuda(fn, warmup=3, reps=REPS).median_us


def host_us(fn, n=10):
    """CPU time of one call (launch overhead): above ~80 µs (the L2 flush) it shows up in time_cuda."""
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = (time.perf_counter() - t) / n * 1e6
    if not SMOKE:
        torch.cuda.synchronize()
    return dt


def main():
    t_start = time.time()
    quick = "--quick" in sys.argv
    all_rows = rows(quick)
    print(f"# {torch.cuda.get_device_name() if not SMOKE else 'cpu smoke'}  torch {torch.__version__}  triton "
          f"{__import__('triton').__version__}  rows {len(all_rows)}", flush=True)
    workers = min(14, os.cpu_count() or 4)
    # Tasks: one candidate over the rows of one candidate list (dtype/precision group), the longest first.
    # A kernel that hangs or crashes its worker must not cost the whole run: multiprocessing.Pool replaces
    # dead workers (their task is reported as unfinished), tasks not done by the deadline are skipped, and
    # a worker lives for one task only, so a CUDA context lost to a faulting kernel spoils nothing else.
    groups: dict[int, list[int]] = {}
    for i, row in enumerate(all_rows):
        groups.setdefault(id(row[5]), []).append(i)
    tasks = sorted(((idx, cand) for idx in groups.values() for cand in all_rows[idx[0]][5]), key=lambda t: -len(t[0]))
    pool = mp.get_context("spawn").Pool(workers, maxtasksperchild=1)
    pending = [pool.apply_async(check_candidate, ([all_rows[i] for i in idx], cand)) for idx, cand in tasks]
    deadline = time.time() + (80 if not SMOKE else 600)
    while time.time() < deadline and not all(r.ready() for r in pending):
        time.sleep(0.2)
    checks = [{} for _ in all_rows]
    for (idx, cand), r in zip(tasks, pending):
        why = "check did not finish (slow compile, a hang or a crashed worker)"
        results = None
        if r.ready():
            try:
                results = r.get(0)
            except Exception as exc:
                why = repr(exc)[:150]
        for k, i in enumerate(idx):
            checks[i][cand[0]] = results[k] if results else (float("inf"), why)
    pool.terminate()
    print(f"# compile + check: {time.time() - t_start:.0f} s", flush=True)
    _init()
    hdr = f"{'kind':<10} {'shape':<36} {'dtype/prec':<16} {'candidate':<32} {'err':>8} {'us':>9} {'cudnn':>9} " \
          f"{'x':>5} {'TFLOP/s':>8} {'%peak':>6} {'host':>6}"
    print(hdr)
    for row, check in zip(all_rows, checks):
        kind, label, p, dt, prec, cands = row
        dtype = getattr(torch, dt)
        x, w, b, kw, extra = make_inputs(kind, p, dtype)
        peak_key = dt if dt != "float32" else prec
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=prec == "tf32"):
            torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
            peer = timed_us(peer_fn(kind, x, w, b, kw, extra))
        torch.backends.cuda.matmul.allow_tf32 = False
        fl = flops(kind, p)
        tol = tol_for(dt, prec)
        best = None
        for cand in cands:
            err, msg = check[cand[0]]
            head = f"{kind:<10} {label:<36} {dt + '/' + prec:<16} {cand[0]:<32} {err:8.1e}"
            if msg or not err <= tol:
                print(f"{head} {'FAILED' if not msg else msg} (tol {tol:.0e})", flush=True)
                continue
            try:
                fn = candidate_fn(kind, cand, prec, x, w, b, kw, extra)
                us = timed_us(fn)
                host = host_us(fn)
            except Exception as exc:
                print(f"{head} {type(exc).__name__}", flush=True)
                continue
            tf = fl / us / 1e6
            print(f"{head} {us:9.1f} {peer:9.1f} {peer / us:5.2f} {tf:8.1f} {100 * tf / PEAK_TFLOPS[peak_key]:5.1f}% "
                  f"{host:6.0f}", flush=True)
            if best is None or us < best[1]:
                best = (cand[0], us)
        if best:
            print(f"{'':<10} {'':<36} {'':<16} best: {best[0]} {best[1]:.1f} us, cudnn {peer:.1f} us, "
                  f"x{peer / best[1]:.2f}", flush=True)
        if time.time() - t_start > 110:
            print("# stopping: time budget", flush=True)
            break
    print(f"# total {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
