"""Launch-configuration sweep for the element-wise kernels (GPU): which BLOCK / num_warps reach the copy roofline.

python3 benchmarks/tune_elementwise.py   -> one line per (kernel, dtype, shape, BLOCK, warps) with µs and the peer's µs
"""
import torch
import torch.nn.functional as F
import triton

from tilewave.harness.timing import time_cuda
from tilewave.kernels import activation as A

SHAPES = [(1, 128, 48000), (1, 128, 1 << 20)]
CONFIGS = [(1024, 4), (2048, 4), (2048, 8), (4096, 4), (4096, 8), (8192, 8), (8192, 16)]

for dtype in (torch.float32, torch.bfloat16):
    for shape in SHAPES:
        x = torch.randn(shape, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        n = x.numel()
        alpha = torch.rand(shape[1], device="cuda", dtype=dtype) + 0.1
        nbytes = 2 * n * x.element_size()
        peers = {"leaky_relu": lambda: F.leaky_relu(x, 0.1), "gelu_erf": lambda: F.gelu(x),
                 "snake": lambda: A.snake_torch(x, alpha)}
        for name, peer in peers.items():
            p = time_cuda(peer).median_us
            for block, warps in CONFIGS:
                if name == "leaky_relu":
                    fn = lambda: A._leaky_relu_kernel[(triton.cdiv(n, block),)](x, y, n, 0.1, BLOCK=block, num_warps=warps)
                elif name == "gelu_erf":
                    fn = lambda: A._gelu_erf_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block, num_warps=warps)
                else:
                    L = shape[-1]
                    fn = lambda: A._snake_kernel[(shape[0] * shape[1], triton.cdiv(L, block))](
                        x, alpha, alpha, y, shape[1], L, HAS_BETA=False, LOG_SCALE=False, FAST_SIN=True,
                        BLOCK=block, num_warps=warps)
                t = time_cuda(fn).median_us
                print(f"{name:<11} {str(dtype)[6:]:<9} {str(shape):<18} BLOCK={block:<5} warps={warps:<3} "
                      f"{t:8.1f} µs  peer {p:8.1f} µs  {nbytes / t / 1e3:7.0f} GB/s")
