"""Roofline ceilings, measured on the device itself and cached (they are the peaks every % is against)."""
from __future__ import annotations

import json
from pathlib import Path

import torch

from tilewave.assets import cache_dir

from .timing import time_cuda


def _cache_file() -> Path:
    return cache_dir() / "peaks.json"


def measure_peaks() -> dict[str, float]:
    """Device-to-device copy bandwidth (GB/s) and dense 8192^3 matmul rates (GFLOP/s) per precision."""
    src = torch.empty(2 * 1024**3 // 4, device="cuda").normal_()
    dst = torch.empty_like(src)
    t = time_cuda(lambda: dst.copy_(src), warmup=3, reps=10, flush_l2=False)
    peaks = {"copy_GBps": 2 * src.numel() * 4 / t.median_us / 1e3}
    src = dst = None  # free the 4 GB before the matmuls
    n = 8192
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        for name, dtype, tf32 in (("bfloat16", torch.bfloat16, False), ("float16", torch.float16, False),
                                  ("tf32", torch.float32, True), ("float32", torch.float32, False)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            t = time_cuda(lambda: a @ b, warmup=2, reps=5, flush_l2=False)
            peaks[f"{name}_GFLOPs"] = 2 * n**3 / t.median_us / 1e3
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return peaks


def device_peaks(remeasure: bool = False) -> dict[str, float]:
    """Peaks for the current GPU, measured once and cached per GPU name and torch version."""
    key = f"{torch.cuda.get_device_name()} / torch {torch.__version__}"
    path = _cache_file()
    cache = json.loads(path.read_text()) if path.exists() else {}
    if remeasure or key not in cache:
        cache[key] = measure_peaks()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cache, indent=1))
    return cache[key]
