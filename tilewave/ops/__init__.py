"""The functions models call. Each picks the Triton kernel or the PyTorch op (see dispatch.py)."""
from tilewave.ops.activation import clamp_scalar, gelu_erf, leaky_relu, snake, upsample_nearest1d
from tilewave.ops.dispatch import backend, placements, reset_placements, use_triton

__all__ = ["backend", "clamp_scalar", "gelu_erf", "leaky_relu", "placements", "reset_placements", "snake",
           "upsample_nearest1d", "use_triton"]
