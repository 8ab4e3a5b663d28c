"""act1d on the GPU: the polyphase FMA kernel at several tiles and tiles per program against the
eager PyTorch chain, float32 and bfloat16, at the large shape and BigVGAN / seed-decoder shapes. (Rounds 1-1c
also timed the former banded-matmul kernel: 1,029 µs float32 / 601 µs bfloat16 at the large shape.)

    PYTHONPATH=. python3 benchmarks/tune_act1d.py

Each candidate is checked against the float64 chain (act1d_torch on float64 inputs) before it is timed; a
candidate over the tolerance row of its dtype is reported, not timed. Kernels compile in parallel processes
first (JIT warm-up fills Triton's cache), so the whole run stays well under two minutes.
GB/s = read x + write y once; % = of the measured copy bandwidth (4,252 GB/s).
"""
import multiprocessing as mp
import sys
import time

import torch
import triton

from tilewave.harness.timing import time_cuda
from tilewave.spec.tolerance import dtype_name, scaled_max_error, tolerance
from tilewave.kernels import antialias as A

COPY_GBS = 4252.0
SHAPES = [("large", (1, 128, 1 << 20)), ("v2 stage 1", (1, 768, 3752)), ("v2 last", (1, 24, 240128)),
          ("seed blk 4", (1, 96, 59520))]
DTYPES = [torch.float32, torch.bfloat16]
# (rows, cols, warps, tiles per program). History, H200: round 1, cols 16/32 were 2-3x slower than cols 8 (the
# unrolled tile outgrows the instruction cache); round 1b, one-warp tiles (row edges by shuffles) were best;
# round 1c (CUDA-graph timing), 32x8 one-warp tiles: float32 best at 1 tile per program (469 µs large, 54% of
# copy bandwidth), bfloat16 at 4 (338 µs, 37%); the raw SFU sine was no faster than the reduced one (not
# ALU-bound). Session 3 (Nsight Compute): L2 at 94% of its throughput, DRAM at 45%: y was written by scalar
# stores (a mask on the unaligned L, 8x the L2 write requests). With 16-byte stores, the whole tile stored at
# once (a warp's vectors adjacent; float32 rows are two vectors) against chunk by chunk: 1 tile per program
# 420.2 against 412.3 µs, 4 tiles 307.8 against 325.7 (large, float32); the kernel now stores whole tiles.
POLY = [(32, 8, 1, 1), (32, 8, 1, 2), (32, 8, 1, 4), (32, 8, 1, 8), (32, 8, 1, 16)]
TAPS = 12
TIME_BUDGET_S = 110  # the lead's run stops at 150 s; what is left after this is reported as skipped


def _poly_name(cfg):
    rows, cols, warps, iters = cfg
    return f"poly {rows}x{cols} w{warps} it{iters}"


def _warm(task):
    """Compile one kernel specialisation in this process (fills the on-disk cache the parent then hits)."""
    dtype, cfg, shape = task
    t = time.time()
    try:
        x = torch.empty(shape, dtype=dtype, device="meta")
        C, L = shape[-2], shape[-1]
        f = torch.float32
        rows, cols, warps, iters = cfg
        grid, n_groups, const = A.poly_launch_args(x, TAPS, rows, cols, iters, True)
        A._act1d_poly_kernel.warmup(dtype, f, f, f, f, dtype, C, L, n_groups, grid=grid, HAS_BETA=True,
                                    LOG_SCALE=True, num_warps=warps, num_stages=1, **const)
        return task, None, time.time() - t
    except Exception as exc:  # reported per candidate; the others still run
        return task, f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:160]}", time.time() - t


def time_graph(fn, reps):
    """Median device time of fn captured as a CUDA graph (the launch's Python overhead left out)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()  # compiles / autotunes outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return time_cuda(graph.replay, warmup=3, reps=reps).median_us


def main():
    t_start = time.time()
    tasks = [(dt, cfg, SHAPES[0][1]) for dt in DTYPES for cfg in POLY]
    # spawn, not fork: a child must be able to initialise CUDA whatever the parent's imports did
    with mp.get_context("spawn").Pool(min(16, len(tasks))) as pool:
        warm = pool.map(_warm, tasks, chunksize=1)
    failed = [(task, err) for task, err, _ in warm if err]
    print(f"warmed {len(tasks)} kernels in {time.time() - t_start:.1f} s (slowest {max(w[2] for w in warm):.1f} s); "
          f"{len(failed)} warm-ups failed (those compile at their first launch below)")
    for (dt, cfg, _), err in failed:
        print(f"  warm-up failed: {dt} {cfg}: {err}")

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator("cuda").manual_seed(0)
    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"snakebeta, log-scale, {TAPS} taps")
    print(f"{'dtype':<9} {'shape':<11} {'candidate':<30} {'max err':>9} {'µs':>9} {'GB/s':>6} {'%copy':>6} "
          f"{'x eager':>8}")
    for dtype in DTYPES:
        tol = tolerance(dtype_name(dtype), "pointwise")
        for label, shape in SHAPES:
            C = shape[1]
            x = torch.randn(shape, device="cuda", generator=gen).to(dtype)
            alpha = torch.randn(C, device="cuda", generator=gen) * 0.5
            beta = torch.randn(C, device="cuda", generator=gen) * 0.5
            ref = A.act1d_torch(x.double(), alpha.double(), beta.double(), True)
            nbytes = 2 * x.numel() * x.element_size()
            reps = 20 if x.numel() > 1 << 24 else 50
            # filters on the device beforehand: a host-to-device copy per call would be timed too (round 1 was)
            f = A.resample_filter(TAPS, "cuda")
            try:
                eager = time_graph(lambda: A.act1d_torch(x, alpha, beta, True, f, f), reps // 2)
            except RuntimeError:  # a chain that cannot be captured is timed as launched
                eager = time_cuda(lambda: A.act1d_torch(x, alpha, beta, True, f, f), warmup=3,
                                  reps=reps // 2).median_us
            y = torch.empty_like(x)
            cands = [(_poly_name(cfg), cfg,
                       lambda cfg=cfg: A.act1d_poly(x, alpha, beta, True, f, f, out=y, rows=cfg[0], cols=cfg[1],
                                                    num_warps=cfg[2], iters=cfg[3]))
                       for cfg in POLY]
            cands.append(("eager PyTorch chain", "eager", None))
            for name, cfg, fn in cands:
                if time.time() - t_start > TIME_BUDGET_S:
                    print(f"{str(dtype)[6:]:<9} {label:<11} {name:<30} skipped (past {TIME_BUDGET_S} s)")
                    continue
                if cfg == "eager":
                    print(f"{str(dtype)[6:]:<9} {label:<11} {name:<30} {'':>9} {eager:9.1f} "
                          f"{nbytes / eager / 1e3:6.0f} {100 * nbytes / eager / 1e3 / COPY_GBS:5.1f}% {1.0:8.2f}")
                    continue
                try:
                    y.fill_(float("nan"))
                    fn()
                    err = scaled_max_error(y, ref)
                    if not err <= tol:
                        print(f"{str(dtype)[6:]:<9} {label:<11} {name:<30} {err:9.2e} WRONG (tolerance {tol:g})")
                        continue
                    t = time_graph(fn, reps)
                except Exception as exc:  # a launch that fails is reported; the sweep goes on
                    print(f"{str(dtype)[6:]:<9} {label:<11} {name:<30} {type(exc).__name__}: {str(exc)[:100]}")
                    continue
                print(f"{str(dtype)[6:]:<9} {label:<11} {name:<30} {err:9.2e} {t:9.1f} {nbytes / t / 1e3:6.0f} "
                      f"{100 * nbytes / t / 1e3 / COPY_GBS:5.1f}% {eager / t:8.2f}")
            sys.stdout.flush()
    print(f"total {time.time() - t_start:.1f} s")


if __name__ == "__main__":
    main()
