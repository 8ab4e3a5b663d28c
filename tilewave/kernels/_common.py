"""Helpers shared by kernel modules: seeded input draws and small Triton functions the interpreter lacks."""
from __future__ import annotations

import torch
import triton
import triton.language as tl


def randn(shape, dtype: torch.dtype, device: str, gen: torch.Generator, scale: float = 1.0,
          shift: float = 0.0) -> torch.Tensor:
    """Seeded normal draw, made on the CPU (so CPU and GPU runs of one seed see the same numbers)."""
    x = torch.randn(shape, generator=gen, dtype=torch.float32) * scale + shift
    return x.to(dtype).to(device)


def rand(shape, dtype: torch.dtype, device: str, gen: torch.Generator, lo: float = 0.0,
         hi: float = 1.0) -> torch.Tensor:
    x = torch.rand(shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
    return x.to(dtype).to(device)


def block_size(n: int, cap: int) -> int:
    """Power-of-two block covering n, at most cap (at least 16 so that tiny shapes still vectorise)."""
    return max(16, min(cap, triton.next_power_of_2(max(1, n))))


@triton.jit
def tanh(x):
    # libdevice.tanh does not run in the CPU interpreter; this form is exact in float32 and saturates cleanly.
    return 2.0 * tl.sigmoid(2.0 * x) - 1.0


@triton.jit
def sin_fast(x):
    """sin via the SFU: reduce to [-pi, pi] (exact enough for |x| < 1e4), then sin.approx.f32 (abs error
    ~1e-6 there). libdevice's sinf costs ~40 instructions with a slow path; at 2 bytes per element that
    makes 16-bit snake compute-bound. GPU only: the interpreter cannot run inline PTX."""
    r = x - 6.283185307179586 * tl.floor(x * 0.15915494309189535 + 0.5)
    return tl.inline_asm_elementwise("sin.approx.f32 $0, $1;", "=r,r", [r], dtype=tl.float32, is_pure=True,
                                     pack=1)
