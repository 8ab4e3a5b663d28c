"""gelu_erf's erf on the GPU: libdevice erff against Abramowitz–Stegun 7.1.26 (|error| <= 1.5e-7), at the
>= 256 MB shape, float32 and bfloat16, beside F.gelu in the same run. python3 benchmarks/tune_gelu.py"""
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilewave.harness.timing import time_cuda
from tilewave.kernels.activation import erf as erf_as  # the Abramowitz-Stegun form gelu_erf adopted


@triton.jit
def _gelu_libdevice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu_as(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + erf_as(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


for dtype in (torch.float32, torch.bfloat16):
    x = torch.randn(128 << 20, device="cuda", dtype=dtype) * 3
    y = torch.empty_like(x)
    n = x.numel()
    block = 4096 // x.element_size()
    ref = F.gelu(x.double()).float() if dtype == torch.float32 else None
    peer = time_cuda(lambda: F.gelu(x)).median_us
    for name, k in (("libdevice erff", _gelu_libdevice), ("A&S 7.1.26", _gelu_as)):
        for b in (block, 2 * block):
            t = time_cuda(lambda: k[(triton.cdiv(n, b),)](x, y, n, BLOCK=b, num_warps=4)).median_us
            err = (y.float() - ref).abs().max().item() if ref is not None else float("nan")
            print(f"{str(dtype)[6:]:<9} {name:<15} BLOCK={b:<5} {t:8.1f} µs  peer {peer:8.1f} µs  "
                  f"{2 * n * x.element_size() / t / 1e3:6.0f} GB/s  max|err| {err:.1e}")
