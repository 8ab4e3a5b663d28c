"""Kernel benchmarks: each registered kernel at its model shapes, beside the stock PyTorch op, same run.

Reports median µs (device events), GB/s and GFLOP/s from the declared bytes and FLOPs, % of the
measured copy bandwidth and of the precision's measured matmul rate, arithmetic intensity and a verdict:
memory-bound (>= 60% of bandwidth), compute-bound (>= 50% of peak FLOP/s), else latency-bound.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

import torch

from tilewave.spec import BenchShape, Kernel, Registry, dtype_of
from tilewave.spec.tolerance import scaled_max_error

from .runner import _as_tuple
from .timing import time_cuda

MEMORY_BOUND = 0.60
COMPUTE_BOUND = 0.50


@dataclass
class BenchResult:
    kernel: str
    shape: str
    dtype: str
    us: float
    peer_us: float
    GBps: float
    GFLOPs: float
    pct_bw: float
    pct_flops: float
    intensity: float
    verdict: str
    speedup: float
    max_err_vs_peer: float

    def line(self, verbose: bool = False) -> str:
        text = (f"{self.kernel:<28} {self.dtype:<8} {self.us:10.1f} µs  peer {self.peer_us:10.1f} µs  "
                f"x{self.speedup:5.2f}  {self.pct_bw:6.1%} BW  {self.pct_flops:6.1%} FLOP  {self.verdict:<14} "
                f"{self.shape}")
        if verbose:
            text += (f"\n{'':<37}{self.GBps:9.1f} GB/s  {self.GFLOPs:10.1f} GFLOP/s  "
                     f"AI {self.intensity:7.2f} FLOP/B  |out-peer| {self.max_err_vs_peer:.1e}")
        return text


def _matmul_label(kernel: Kernel, params: dict, dtype: str) -> str:
    """float32 rows name the tensor-core precision they ran at (tf32, tf32x3); others their dtype."""
    if dtype == "float32" and params.get("precision") in ("tf32", "tf32x3"):
        return params["precision"]
    return kernel.tolerance_row(params, dtype)


def _peak_flops(peaks: dict[str, float], kernel: Kernel, params: dict, dtype: str) -> float:
    if kernel.arithmetic == "float32":
        return peaks["float32_GFLOPs"]
    label = _matmul_label(kernel, params, dtype)
    if label == "tf32x3":  # three tf32 MMAs per product: its roofline is a third of the tf32 peak
        return peaks["tf32_GFLOPs"] / 3
    return peaks.get(f"{label}_GFLOPs", peaks["float32_GFLOPs"])


@contextlib.contextmanager
def _peer_precision(row: str):
    """The PyTorch peer computes at the same precision as the kernel: TF32 only for tf32 cases (tolerance row)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = row == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def bench_shape(kernel: Kernel, shape: BenchShape, dtype: str, peaks: dict[str, float]) -> BenchResult:
    gen = torch.Generator().manual_seed(0)
    inputs = kernel.make_inputs(shape.params, dtype_of(dtype), "cuda", gen)
    outs = _as_tuple(kernel.alloc_out(inputs))
    out_arg = outs if len(outs) > 1 else outs[0]
    row = kernel.tolerance_row(shape.params, dtype)
    # `precision` is a tilewave launch choice; the peer's arithmetic is set by the backend flags instead
    peer_inputs = {k: v for k, v in inputs.items() if k != "precision"}
    with _peer_precision(row):
        ours = time_cuda(lambda: kernel.launch(**inputs, out=out_arg))
        try:
            peer_out = _as_tuple(kernel.peer(**peer_inputs))
            peer_us = time_cuda(lambda: kernel.peer(**peer_inputs)).median_us
        except RuntimeError:  # the stock op does not support this case (e.g. cuFFT fp16 at n_fft 20)
            peer_out, peer_us = (), float("nan")
    try:
        err = max((scaled_max_error(o, p.reshape(o.shape)) for o, p in zip(outs, peer_out)), default=float("nan"))
    except (RuntimeError, ValueError):
        err = float("nan")  # the peer returns a differently laid-out result; the tests cover correctness
    itemsize = torch.empty((), dtype=dtype_of(dtype)).element_size()
    nbytes, flops = shape.bytes(shape.params, itemsize), shape.flops(shape.params)
    s = ours.median_us * 1e-6
    gbps, gflops = nbytes / s / 1e9, flops / s / 1e9
    pct_bw = gbps / peaks["copy_GBps"]
    pct_flops = gflops / _peak_flops(peaks, kernel, shape.params, dtype)
    verdict = ("memory-bound" if pct_bw >= MEMORY_BOUND else
               "compute-bound" if pct_flops >= COMPUTE_BOUND else "latency-bound")
    label = _matmul_label(kernel, shape.params, dtype)
    return BenchResult(kernel.name, shape.label, dtype if label == dtype else f"{dtype}/{label}",
                       ours.median_us, peer_us, gbps, gflops, pct_bw, pct_flops,
                       flops / nbytes if nbytes else 0.0, verdict, peer_us / ours.median_us, err)


def run_bench(registry: Registry, pattern: str | None, dtypes: list[str] | None, peaks: dict[str, float],
              verbose: bool = False, echo=print) -> list[BenchResult]:
    kernels = registry.select(pattern)
    if not kernels:
        raise RuntimeError(f"no kernels match pattern={pattern!r}")
    results = []
    for k in kernels:
        for shape in k.bench:
            for dtype in shape.dtypes or k.dtypes:
                if dtypes and dtype not in dtypes:
                    continue
                r = bench_shape(k, shape, dtype, peaks)
                echo(r.line(verbose))
                results.append(r)
                torch.cuda.empty_cache()
    return results


def as_records(results: list[BenchResult]) -> list[dict]:
    return [asdict(r) for r in results]
