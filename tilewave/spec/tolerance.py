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
# spectral: a whole model's audio against its float32 run, log_spectral_distance (not the scaled max error);
# only the rows a model runs in. bfloat16: the bound is the distance that a new seed of Kokoro's harmonic source's
# random draws alone makes, inaudible, and above what Kokoro's bfloat16 run shows. float32: a quarter of that
# scale, above what float32-class arithmetic moves it (tf32x3 against exact), for runs that differ in rounding
# only (a GPU batch against its items' solo runs). The distances: benchmarks/RESULTS.md.
TOLERANCE: dict[str, dict[str, float]] = {
    "float32": {"pointwise": 1e-4, "reduction": 1e-3, "recurrence": 2e-3, "spectral": 1e-2},
    "tf32": {"pointwise": 1e-3, "reduction": 1e-2, "recurrence": 2e-2},
    "float16": {"pointwise": 1e-2, "reduction": 2e-2, "recurrence": 5e-2},
    "bfloat16": {"pointwise": 5e-2, "reduction": 8e-2, "recurrence": 2e-1, "spectral": 4e-2},
}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tolerance(row: str, kind: str = "pointwise") -> float:
    """Bound for a row: a storage dtype name ('float32', 'float16', 'bfloat16') or matmul precision ('tf32')."""
    try:
        return TOLERANCE[row][kind]
    except KeyError:
        raise KeyError(f"no tolerance for row={row!r} kind={kind!r}; the table has rows {sorted(TOLERANCE)}, "
                       f"and this row the kinds {sorted(TOLERANCE.get(row, {}))}") from None


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


STFT_RESOLUTIONS = ((512, 128), (1024, 256), (2048, 512))  # (n_fft, hop): 21 ms to 85 ms windows at 24 kHz
FLOOR_BELOW_PEAK = 1e-3  # magnitudes are floored 60 dB below the reference's peak: what lies under it is inaudible


def log_spectral_distance(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Two waveforms [N] apart as a listener would hear it: the mean |log |STFT(out)| - log |STFT(ref)|| over the
    bins of three resolutions (STFT_RESOLUTIONS, Hann windows), magnitudes floored at FLOOR_BELOW_PEAK times the
    reference's peak, in nepers (0.1 ~ 0.9 dB). For whole models' audio, where a bound on the largest sample
    error says little (a phase shift of a loud partial moves samples a lot and the sound not at all). NaN or
    inf in `out` gives inf."""
    out64 = out.detach().to("cpu", torch.float64).flatten()
    ref64 = ref.detach().to("cpu", torch.float64).flatten()
    if out64.shape != ref64.shape:
        raise ValueError(f"length mismatch: {out64.numel()} vs {ref64.numel()} samples")
    if not torch.isfinite(out64).all():
        return float("inf")
    total = 0.0
    for n_fft, hop in STFT_RESOLUTIONS:
        window = torch.hann_window(n_fft, dtype=torch.float64)
        mag_out, mag_ref = (torch.stft(x, n_fft, hop, window=window, return_complex=True).abs() for x in (out64, ref64))
        floor = FLOOR_BELOW_PEAK * float(mag_ref.max()) + 1e-12
        total += (mag_out.clamp_min(floor).log() - mag_ref.clamp_min(floor).log()).abs().mean().item()
    return total / len(STFT_RESOLUTIONS)
