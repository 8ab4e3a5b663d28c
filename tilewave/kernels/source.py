"""The harmonic (sine) source of iSTFTNet-style generators (Kokoro): F0 -> tanh(w·(sin(φ_k)·amp·uv + noise) + b).

harmonic_source       tanh(w·(sin(φ_k)·amp·uv + noise_amp·noise) + b) [B, T, 1] from a sample-rate F0 curve;
                      φ_k the phase of harmonic k, integrated at the frame rate (T/U) with the reference's linear
                      interpolations (see harmonic_source_oracle).
Kernels: a frame-rate scan (one program per batch row) then one sample-rate pass. The harmonic phase is accumulated
in float64: at 10 s the phase reaches ~10^6 rad, where a float32 phase is off by ~0.1 rad.
Launch invariants: f0 contiguous (the noise may be a transposed view: strides are passed); T % upsample_scale == 0
(as the reference requires).
"""
from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

from tilewave.kernels._common import tanh
from tilewave.kernels.spectral.common import _check_contiguous
from tilewave.reference.source import harmonic_source_torch
from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register


SCAN_BLOCK_L, SOURCE_BLOCK_T = 64, 128
_SR = 24000  # the cases' sample rate (Kokoro's)


@triton.jit
def _source_phase_scan_kernel(f0_ptr, rand_ptr, cyc_ptr, T, L, scale, sample_rate, K,
                              BLOCK_L: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (B,). cyc[b, i, k] = Σ_{m<=i} D[m, k] in cycles (float64), D = the per-sample phase increment
    # frac(f0·(k+1)/sr) (+ the random initial phase on sample 0) linearly resampled to frame i.
    b = tl.program_id(0).to(tl.int64)
    k = tl.arange(0, BLOCK_K)
    kmask = k < K
    harm = (k + 1).to(tl.float64)
    # scale (upsample factor) and sample_rate arrive as float32 scalars (exact for integers < 2^24).
    sr = tl.cast(sample_rate, tl.float64)
    ini = tl.load(rand_ptr + b * K + k, mask=kmask, other=0.0).to(tl.float64)
    carry = tl.zeros((BLOCK_K,), dtype=tl.float64)
    for l0 in range(0, L, BLOCK_L):
        i = l0 + tl.arange(0, BLOCK_L)
        lmask = i < L
        src = tl.maximum((i.to(tl.float64) + 0.5) * tl.cast(scale, tl.float64) - 0.5, 0.0)
        i0 = tl.floor(src).to(tl.int32)
        w1 = src - i0.to(tl.float64)
        i1 = tl.minimum(i0 + 1, T - 1)
        fa = tl.load(f0_ptr + b * T + i0, mask=lmask, other=0.0).to(tl.float64)
        fb = tl.load(f0_ptr + b * T + i1, mask=lmask, other=0.0).to(tl.float64)
        ra = fa[:, None] * harm[None, :] / sr
        rb = fb[:, None] * harm[None, :] / sr
        ra = ra - tl.floor(ra) + tl.where(i0[:, None] == 0, ini[None, :], 0.0)
        rb = rb - tl.floor(rb) + tl.where(i1[:, None] == 0, ini[None, :], 0.0)
        d = tl.where(lmask[:, None] & kmask[None, :], (1.0 - w1[:, None]) * ra + w1[:, None] * rb, 0.0)
        c = tl.cumsum(d, axis=0) + carry[None, :]
        tl.store(cyc_ptr + (b * L + i[:, None]) * BLOCK_K + k[None, :], c, mask=lmask[:, None])
        carry += tl.sum(d, axis=0)


@triton.jit
def _harmonic_source_kernel(f0_ptr, cyc_ptr, noise_ptr, w_ptr, bias_ptr, y_ptr, T, L, scale, K,
                            ns_b, ns_t, ns_k, sine_amp, noise_std, threshold,
                            BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid: (B, cdiv(T, BLOCK_T)). Phase (cycles) linearly interpolated from the frame rate, times U; only its
    # fractional part reaches the float32 sine.
    b = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    k = tl.arange(0, BLOCK_K)
    jmask = j < T
    kmask = k < K
    Uf = tl.cast(scale, tl.float64)
    src = tl.maximum((j.to(tl.float64) + 0.5) / Uf - 0.5, 0.0)
    i0 = tl.floor(src).to(tl.int32)
    w1 = src - i0.to(tl.float64)
    i1 = tl.minimum(i0 + 1, L - 1)
    m2 = jmask[:, None] & kmask[None, :]
    c0 = tl.load(cyc_ptr + (b * L + i0[:, None]) * BLOCK_K + k[None, :], mask=m2, other=0.0)
    c1 = tl.load(cyc_ptr + (b * L + i1[:, None]) * BLOCK_K + k[None, :], mask=m2, other=0.0)
    cyc = Uf * ((1.0 - w1[:, None]) * c0 + w1[:, None] * c1)
    frac = (cyc - tl.floor(cyc)).to(tl.float32)
    sines = tl.sin(6.283185307179586 * frac) * sine_amp
    f0 = tl.load(f0_ptr + b * T + j, mask=jmask, other=0.0).to(tl.float32)
    uv = (f0 > threshold).to(tl.float32)
    amp = uv * noise_std + (1.0 - uv) * (sine_amp / 3.0)
    noise = tl.load(noise_ptr + b * ns_b + j[:, None].to(tl.int64) * ns_t + k[None, :] * ns_k, mask=m2,
                    other=0.0).to(tl.float32)
    exc = sines * uv[:, None] + amp[:, None] * noise
    w = tl.load(w_ptr + k, mask=kmask, other=0.0).to(tl.float32)
    y = tl.sum(exc * w[None, :], axis=1) + tl.load(bias_ptr).to(tl.float32)
    tl.store(y_ptr + b * T + j, tanh(y).to(y_ptr.dtype.element_ty), mask=jmask)


def harmonic_source(f0: torch.Tensor, merge_weight: torch.Tensor, merge_bias: torch.Tensor, rand_ini: torch.Tensor,
                    noise: torch.Tensor, *, sample_rate: int, upsample_scale: int, sine_amp: float = 0.1,
                    noise_std: float = 0.003, voiced_threshold: float = 10.0, out: torch.Tensor | None = None):
    """f0 [B, T, 1] (Hz), merge_weight [1, K], merge_bias [1], rand_ini [B, K], noise [B, T, K] -> [B, T, 1]."""
    _check_contiguous("harmonic_source", f0=f0, rand_ini=rand_ini)
    B, T = f0.shape[0], f0.shape[1]
    K = merge_weight.shape[-1]
    U = int(upsample_scale)
    if U < 1 or T % U:
        raise ValueError(f"harmonic_source: the length ({T}) must be a multiple of upsample_scale ({U}), as the "
                         f"reference's frame-rate phase requires")
    if tuple(rand_ini.shape) != (B, K) or tuple(noise.shape) != (B, T, K):
        raise ValueError(f"harmonic_source: expected rand_ini [{B}, {K}] and noise [{B}, {T}, {K}], got "
                         f"{tuple(rand_ini.shape)} and {tuple(noise.shape)}")
    L = T // U
    BLOCK_K = triton.next_power_of_2(K)
    out = f0.new_empty(B, T, 1) if out is None else out
    if B and T:
        cyc = torch.empty(B, L, BLOCK_K, device=f0.device, dtype=torch.float64)
        _source_phase_scan_kernel[(B,)](f0, rand_ini, cyc, T, L, float(U), float(sample_rate), K,
                                        BLOCK_L=SCAN_BLOCK_L, BLOCK_K=BLOCK_K, num_warps=4)
        _harmonic_source_kernel[(B, triton.cdiv(T, SOURCE_BLOCK_T))](
            f0, cyc, noise, merge_weight.contiguous(), merge_bias.contiguous(), out, T, L, float(U), K, *noise.stride(),
            float(sine_amp), float(noise_std), float(voiced_threshold), BLOCK_T=SOURCE_BLOCK_T, BLOCK_K=BLOCK_K,
            num_warps=4)
    return out


def _linear_resample(x: np.ndarray, scale: float, out_len: int) -> np.ndarray:
    """F.interpolate(mode='linear', align_corners=False) along the last axis: source (i + 0.5)·scale − 0.5,
    clamped below at 0; the right neighbour clamped to the last sample."""
    src = np.maximum((np.arange(out_len) + 0.5) * scale - 0.5, 0.0)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, x.shape[-1] - 1)
    w1 = src - i0
    return (1 - w1) * x[..., i0] + w1 * x[..., i1]


def harmonic_source_oracle(f0, merge_weight, merge_bias, rand_ini, noise, *, sample_rate, upsample_scale,
                           sine_amp=0.1, noise_std=0.003, voiced_threshold=10.0):
    """The reference SineGen + SourceModuleHnNSF, step by step, in float64."""
    f0, w, U = f0.numpy(), merge_weight.numpy(), upsample_scale
    T = f0.shape[1]
    rad = (f0 * np.arange(1, w.shape[-1] + 1) / sample_rate) % 1           # [B, T, K]
    rad[:, 0, :] += rand_ini.numpy()
    rad = _linear_resample(rad.transpose(0, 2, 1), U, T // U)               # [B, K, T/U]
    phase = np.cumsum(rad, axis=-1) * 2 * np.pi
    phase = _linear_resample(phase * U, 1 / U, T).transpose(0, 2, 1)        # [B, T, K]
    uv = (f0 > voiced_threshold).astype(np.float64)
    amp = uv * noise_std + (1 - uv) * sine_amp / 3
    excitation = np.sin(phase) * sine_amp * uv + amp * noise.numpy()
    return torch.from_numpy(np.tanh(excitation @ w.T + merge_bias.numpy()))


def _source_inputs(p, dtype, device, gen):
    B, T, K = p["batch"], p["frames"] * p["upsample"], p["harmonics"]
    # F0 in Hz, 80..400 voiced with unvoiced stretches (0 Hz) between, as a pitch tracker gives; held per
    # frame and slightly jittered, so the frame-rate resampling matters.
    per_frame = torch.rand(B, p["frames"], generator=gen) * 320 + 80
    per_frame[torch.rand(B, p["frames"], generator=gen) < 0.25] = 0.0
    f0 = per_frame.repeat_interleave(p["upsample"], 1) + torch.randn(B, T, generator=gen) * (per_frame.repeat_interleave(
        p["upsample"], 1) > 0)
    rand_ini = torch.rand(B, K, generator=gen)
    rand_ini[:, 0] = 0
    noise = torch.randn(B, K, T, generator=gen).transpose(1, 2)
    return {"f0": f0[..., None].to(dtype).to(device), "merge_weight": (torch.randn(1, K, generator=gen) * 0.3).to(
                dtype).to(device),
            "merge_bias": (torch.randn(1, generator=gen) * 0.1).to(dtype).to(device),
            "rand_ini": rand_ini.to(dtype).to(device), "noise": noise.to(dtype).to(device),
            "sample_rate": _SR, "upsample_scale": p["upsample"], "sine_amp": 0.1, "noise_std": 0.003,
            "voiced_threshold": 10.0}


def _source_flops(p):
    return p["batch"] * p["frames"] * p["upsample"] * p["harmonics"] * 12.0


def _source_bytes(p, itemsize):
    T = p["frames"] * p["upsample"]
    return itemsize * p["batch"] * T * (2 + p["harmonics"])


def _source_variants():
    return [AotVariant("_source_phase_scan_kernel[fp32]", _source_phase_scan_kernel,
                       {"f0_ptr": "*fp32", "rand_ptr": "*fp32", "cyc_ptr": "*fp64", "T": "i32", "L": "i32",
                        "scale": "fp32", "sample_rate": "fp32", "K": "i32"},
                       {"BLOCK_L": SCAN_BLOCK_L, "BLOCK_K": 16}),
            AotVariant("_harmonic_source_kernel[fp32]", _harmonic_source_kernel,
                       {"f0_ptr": "*fp32", "cyc_ptr": "*fp64", "noise_ptr": "*fp32", "w_ptr": "*fp32",
                        "bias_ptr": "*fp32", "y_ptr": "*fp32", "T": "i32", "L": "i32", "scale": "fp32", "K": "i32",
                        "ns_b": "i64", "ns_t": "i64", "ns_k": "i64", "sine_amp": "fp32", "noise_std": "fp32",
                        "threshold": "fp32"},
                       {"BLOCK_T": SOURCE_BLOCK_T, "BLOCK_K": 16})]


register(Kernel(
    name="harmonic_source", family="spectral", used_by=("kokoro",),
    doc="tanh(w · (sin(2π·U·lerp(cumsum(lerp(frac(f0·k/sr))))) ·amp·uv + noise_amp·noise) + b), draws injected",
    make_inputs=_source_inputs, alloc_out=lambda i: torch.empty_like(i["f0"]), launch=harmonic_source,
    oracle=harmonic_source_oracle, peer=harmonic_source_torch,
    cases=[Case({"batch": 2, "frames": 5, "upsample": 30, "harmonics": 9}),
           Case({"batch": 1, "frames": 4, "upsample": 300, "harmonics": 9}),
           Case({"batch": 1, "frames": 7, "upsample": 7, "harmonics": 3}),
           Case({"batch": 1, "frames": 800, "upsample": 300, "harmonics": 9}, devices=("cuda",)),
           Case({"batch": 3, "frames": 211, "upsample": 300, "harmonics": 9}, devices=("cuda",))],
    dtypes=("float32",),
    bench=[BenchShape("Kokoro harmonic source 10 s [1, 240000, 9]",
                      {"batch": 1, "frames": 800, "upsample": 300, "harmonics": 9},
                      flops=_source_flops, bytes=_source_bytes),
           BenchShape("large [16, 480000, 9]", {"batch": 16, "frames": 1600, "upsample": 300, "harmonics": 9},
                      flops=_source_flops, bytes=_source_bytes)],
    variants=_source_variants,
))
