"""Helpers shared by kernel modules: seeded input draws and small Triton functions the interpreter lacks."""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl


@functools.lru_cache(maxsize=None)
def hopper_or_newer(device: torch.device) -> bool:
    """sm_90+: TMA descriptors, wgmma and programmatic dependent launch are there."""
    return torch.device(device).type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


# Above this many elements a CUDA draw is made on the device (seeded from `gen`): drawing the
# 128M-element bench tensors on one CPU core takes seconds each.
_DEVICE_DRAW_MIN = 1 << 22


def _generator_for(shape, device: str, gen: torch.Generator) -> tuple[torch.Generator, str]:
    """Model-sized draws come from the CPU generator, so a CPU and a GPU run of one seed see the same
    numbers; bench-sized ones on CUDA from a device generator seeded by it (still reproducible)."""
    numel = 1
    for n in shape:
        numel *= n
    if torch.device(device).type == "cuda" and numel >= _DEVICE_DRAW_MIN:
        seed = int(torch.randint(0, 2**62, (1,), generator=gen))
        return torch.Generator(device).manual_seed(seed), device
    return gen, "cpu"


def randn(shape, dtype: torch.dtype, device: str, gen: torch.Generator, scale: float = 1.0,
          shift: float = 0.0) -> torch.Tensor:
    """Seeded normal draw in float32, rounded through `dtype` (what the oracle then sees)."""
    g, where = _generator_for(shape, device, gen)
    x = torch.randn(shape, generator=g, dtype=torch.float32, device=where) * scale + shift
    return x.to(dtype).to(device)


def rand(shape, dtype: torch.dtype, device: str, gen: torch.Generator, lo: float = 0.0,
         hi: float = 1.0) -> torch.Tensor:
    g, where = _generator_for(shape, device, gen)
    x = torch.rand(shape, generator=g, dtype=torch.float32, device=where) * (hi - lo) + lo
    return x.to(dtype).to(device)


def check_channel_params(name: str, C: int, alpha: torch.Tensor, beta: torch.Tensor | None) -> None:
    """Per-channel activation parameters must hold one value per channel of x."""
    if alpha.numel() != C or (beta is not None and beta.numel() != C):
        raise ValueError(f"{name}: parameters must have one value per channel ({C}), got alpha "
                         f"{tuple(alpha.shape)}" + ("" if beta is None else f", beta {tuple(beta.shape)}"))


def block_size(n: int, cap: int) -> int:
    """Power-of-two block covering n, at most cap (at least 16 so that tiny shapes still vectorise)."""
    return max(16, min(cap, triton.next_power_of_2(max(1, n))))


@triton.jit
def tanh(x):
    # libdevice.tanh does not run in the CPU interpreter; this form is exact in float32 and saturates cleanly.
    return 2.0 * tl.sigmoid(2.0 * x) - 1.0


@triton.jit
def sin(z, FAST: tl.constexpr):
    """sin(z). FAST (GPU only: the interpreter cannot run inline PTX): a two-constant Cody-Waite reduction
    to [-pi, pi] (6.28125 is exact in 8 bits, so k * 6.28125 is exact for |k| < 2^16), then the SFU's
    sin.approx.f32: ~1e-6 absolute, 4 instructions and one SFU op against libdevice's ~25 plus a slow
    path. At 2 bytes per element libdevice's sine makes snake compute-bound."""
    if FAST:
        k = tl.floor(z * 0.15915494309189535 + 0.5)
        r = z - k * 6.28125 - k * 0.0019353071795864769
        return tl.inline_asm_elementwise("sin.approx.f32 $0, $1;", "=r,r", [r], dtype=tl.float32, is_pure=True,
                                         pack=1)
    else:
        return tl.sin(z)
