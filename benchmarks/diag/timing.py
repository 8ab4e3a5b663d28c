"""How much of a bench row is the kernel? Times registry bench rows under four cold-cache procedures.

  zero         time_cuda as it was: 256 MB memset, then the events around fn
  sleep+zero   a device spin before the memset, so the host has enqueued fn before the GPU reaches it
               (a row whose host launch time exceeds the memset's ~80 µs is otherwise partly host time)
  sleep+clean  as above, then a 128 MB read: the L2 holds clean lines, so the memset's ~60 MB of dirty
               lines are not written back inside the timed region
  copy         a device-to-device copy of the row's declared bytes (half read, half written) under the
               sleep+clean procedure: the bandwidth a memory-bound op of this size can reach

Run on the GPU: PYTHONPATH=. python3 benchmarks/diag/timing.py [substring ...]
For a profiler: ... diag/timing.py --once KERNEL "LABEL" DTYPE [REPS]  (launches that row REPS times, default 3)
"""
from __future__ import annotations

import statistics
import sys

import torch

from tilewave.harness.bench import _peer_precision
from tilewave.spec import dtype_of
from tilewave.harness.catalogue import load_all_kernels
from tilewave.harness.runner import _as_tuple

ROWS = [
    ("sdpa_decode_sink", "32768 cached keys, 64 q / 8 kv heads x 64", ("float16",)),
    ("sdpa_decode_sink", "32768 cached keys, 64 q / 8 kv heads x 128", ("float16", "bfloat16")),
    ("istft", "large [16, 11, 96001] n_fft 20 hop 5", ("float32", "float16")),
    ("istft_exp_sin", "large [16, 22, 96001]", ("float32", "float16")),
    ("act1d", "large [1, 128, 1048576]", ("float32", "bfloat16")),
    ("act1d", "BigVGAN v2 stage 1 AMP [1, 768, 3752]", ("float32", "bfloat16")),
    ("conv1d_transpose", "Kokoro gen up x10 512->256 k20 [1, 512, 800]", ("float16", "bfloat16")),
    ("conv1d_transpose", "Kokoro gen up x6 256->128 k12 [1, 256, 8000]", ("float16", "bfloat16")),
    ("conv1d_transpose", "BigVGAN v2 up x2 48->24 k4 [1, 48, 120064]", ("float16", "bfloat16")),
    ("conv1d_transpose", "BigVGAN v2 up x2 384->192 k4 [1, 384, 15008]", ("bfloat16",)),
    ("conv1d_transpose", "decoder up x3 192->96 k6 [1, 192, 80000]", ("bfloat16",)),
    ("conv1d", "Kokoro gen resblock 256ch k11 d5 [1, 256, 8000]", ("float16", "bfloat16")),
    ("conv1d", "BigVGAN v2 conv_pre 100->1536 k7 [1, 100, 938]", ("float16",)),
    ("stft", "large [16, 480000] n_fft 1024 hop 256", ("float32",)),
]

SLEEP_CYCLES = 1_000_000  # ~0.5 ms at 1.98 GHz: longer than any row's host launch time


def timed(fn, mode: str, reps: int = 60) -> float:
    flush = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    clean = torch.ones(128 * 2**20 // 4, dtype=torch.float32, device="cuda")
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        if mode != "zero":
            torch.cuda._sleep(SLEEP_CYCLES)
        flush.zero_()
        if mode == "sleep+clean":
            clean.sum()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def build_row(k, label: str, dtype: str):
    """(ours, peer, declared bytes) of one registered bench row, inputs drawn as `tilewave bench` draws them."""
    shape = next(s for s in k.bench if s.label == label)
    gen = torch.Generator().manual_seed(0)
    inputs = k.make_inputs(shape.params, dtype_of(dtype), "cuda", gen)
    outs = _as_tuple(k.alloc_out(inputs))
    out_arg = outs if len(outs) > 1 else outs[0]
    peer_inputs = {a: v for a, v in inputs.items() if a != "precision"}
    itemsize = torch.empty((), dtype=dtype_of(dtype)).element_size()
    nbytes = shape.bytes(shape.params, itemsize)
    return (lambda: k.launch(**inputs, out=out_arg)), (lambda: k.peer(**peer_inputs)), nbytes


def once(name: str, label: str, dtype: str, reps: int = 3) -> None:
    k = {k.name: k for k in load_all_kernels()}[name]
    ours, _, _ = build_row(k, label, dtype)
    for _ in range(reps):
        ours()
    torch.cuda.synchronize()


def main(filters: list[str]) -> None:
    reg = load_all_kernels()
    kernels = {k.name: k for k in reg}
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    head = f"{'row':<70} {'':5} {'zero':>8} {'sl+zero':>8} {'sl+clean':>8}   (µs)"
    print(head)
    for name, label, dtypes in ROWS:
        if filters and not any(f in f"{name} {label}" for f in filters):
            continue
        k = kernels[name]
        shape = next(s for s in k.bench if s.label == label)
        for dtype in dtypes:
            ours, peer, nbytes = build_row(k, label, dtype)
            src = torch.empty(max(nbytes // 2, 4) // 4, device="cuda")
            dst = torch.empty_like(src)
            with _peer_precision(k.tolerance_row(shape.params, dtype)):
                fns = {"ours": ours, "peer": peer, "copy": lambda: dst.copy_(src)}
                for who, fn in fns.items():
                    try:
                        t = [timed(fn, m) for m in ("zero", "sleep+zero", "sleep+clean")]
                    except RuntimeError as exc:
                        print(f"{name + ' ' + label:<70} {who:5} failed: {str(exc)[:60]}")
                        continue
                    bw = f"  {nbytes / t[2] / 1e3:7.0f} GB/s at sl+clean" if nbytes else ""
                    print(f"{(name + ' ' + label + ' ' + dtype)[:70]:<70} {who:5} "
                          f"{t[0]:8.1f} {t[1]:8.1f} {t[2]:8.1f}{bw}")
            del ours, peer, src, dst
            torch.cuda.empty_cache()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--once"]:
        once(*sys.argv[2:5], *map(int, sys.argv[5:6]))
    else:
        main(sys.argv[1:])
