"""The one tolerance table.

Every comparison in the project (kernel tests, model parity) takes its bound from here, keyed by the
storage dtype (or by the matmul precision where that, not storage, limits accuracy) and by the kind
of computation. The metric is the scaled max error `max|out - ref| / max(1, max|ref|)`: absolute for
O(1) values, relative once outputs grow large (long convolution sums), so one number per row works
for activations and for 4,000-term dot products alike.
"""
from __future__ import annotations

import torch

# pointwise: each output depends on O(1) inputs; reduction: sums of many terms (convs, norms, matmuls);
# recurrence: errors compound over time steps (LSTM) -- float32 only, as the spec requires.
TOLERANCE: dict[str, dict[str, float]] = {
    "float32": {"pointwise": 1e-4, "reduction": 1e-3, "recurrence": 2e-3},
    "tf32": {"pointwise": 1e-3, "reduction": 1e-2, "recurrence": 2e-2},
    "float16": {"pointwise": 1e-2, "reduction": 2e-2, "recurrence": 5e-2},
    "bfloat16": {"pointwise": 5e-2, "reduction": 8e-2, "recurrence": 2e-1},
}

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tolerance(row: str, kind: str = "pointwise") -> float:
    """Bound for a row: a storage dtype name ('float32', 'float16', 'bfloat16') or matmul precision ('tf32')."""
    try:
        return TOLERANCE[row][kind]
    except KeyError:
        raise KeyError(f"no tolerance for row={row!r} kind={kind!r}; "
                       f"the table has {sorted(TOLERANCE)} x {sorted(TOLERANCE['float32'])}") from None


def scaled_max_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """max|out - ref| / max(1, max|ref|) in float64; NaN or inf anywhere in `out` gives inf (never passes)."""
    out64 = out.detach().to("cpu", torch.float64)
    ref64 = ref.detach().to("cpu", torch.float64)
    if out64.shape != ref64.shape:
        raise ValueError(f"shape mismatch: kernel {tuple(out64.shape)} vs oracle {tuple(ref64.shape)}")
    if not torch.isfinite(out64).all():
        return float("inf")
    if out64.numel() == 0:
        return 0.0
    scale = max(1.0, ref64.abs().max().item())
    return (out64 - ref64).abs().max().item() / scale
