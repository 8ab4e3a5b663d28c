"""Launch sweep for the fused act1d kernel (GPU): tile rows, warps and the dot precision, at BigVGAN's last-stage
shape and the large one, beside the eager PyTorch chain. python3 benchmarks/tune_act1d.py"""
import torch
import triton

from tilewave.harness.timing import time_cuda
from tilewave.kernels import antialias as A

for dtype in (torch.float32, torch.bfloat16):
    for C, L in ((48, 480000), (128, 1 << 20)):
        x = torch.randn(1, C, L, device="cuda", dtype=dtype)
        alpha = torch.randn(C, device="cuda") * 0.3
        beta = torch.randn(C, device="cuda") * 0.3
        f = A.resample_filter(device="cuda").reshape(-1).float().contiguous()
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        out_w = A.WINDOW - 2 * (f.numel() // 4)
        peer = time_cuda(lambda: A.act1d_torch(x, alpha, beta, True), reps=20).median_us
        precisions = ("tf32x3", "tf32") if dtype == torch.float32 else ("tf32",)
        for rows in (16, 32, 64, 128):
            for warps in (4, 8):
                for prec in precisions:
                    n_tiles = triton.cdiv(L, rows * out_w)
                    fn = lambda: A._act1d_kernel[(C * n_tiles,)](
                        x, alpha, beta, f, f, y, C, L, n_tiles, HAS_BETA=True, LOG_SCALE=True, TAPS=f.numel(),
                        ROWS=rows, WINDOW=A.WINDOW, FAST_SIN=True, PRECISION=prec, num_warps=warps)
                    try:
                        t = time_cuda(fn, reps=50).median_us
                    except Exception as exc:  # a tile that does not fit (registers, shared memory)
                        print(f"{str(dtype)[6:]:<9} [{C}, {L}] ROWS={rows} warps={warps} {prec}: {type(exc).__name__}")
                        continue
                    print(f"{str(dtype)[6:]:<9} [{C}, {L}] ROWS={rows:<3} warps={warps} {prec:<6} {t:9.1f} µs  "
                          f"{nbytes / t / 1e3:6.0f} GB/s  peer {peer:9.1f} µs")
