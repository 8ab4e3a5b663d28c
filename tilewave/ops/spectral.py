"""Spectral ops: STFT/iSTFT with a periodic Hann window, center=True reflect padding, and mel front-ends."""
from __future__ import annotations

import torch

from tilewave.ops.dispatch import use_triton


def _hann(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.hann_window(n, periodic=True, device=like.device, dtype=like.dtype)


def stft_mag_phase(x: torch.Tensor, n_fft: int, hop: int, win_length: int | None = None):
    """x [B, N] -> (magnitude, phase), each [B, n_fft // 2 + 1, frames]; phase = atan2(im, re)."""
    win_length = win_length or n_fft
    use_triton("stft", x, supported=False, reason="no Triton kernel yet")
    spec = torch.stft(x, n_fft, hop, win_length, window=_hann(win_length, x), center=True,
                      pad_mode="reflect", return_complex=True)
    return spec.abs(), spec.angle()


def istft_mag_phase(magnitude: torch.Tensor, phase: torch.Tensor, n_fft: int, hop: int,
                    win_length: int | None = None) -> torch.Tensor:
    """Inverse of stft_mag_phase (overlap-add divided by the window-square sum): [B, F, frames] -> [B, N]."""
    win_length = win_length or n_fft
    use_triton("istft", magnitude, phase, supported=False, reason="no Triton kernel yet")
    spec = torch.polar(magnitude, phase)
    return torch.istft(spec, n_fft, hop, win_length, window=_hann(win_length, magnitude), center=True)


def istft_exp_sin(x: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
    """The iSTFTNet generator tail: x [B, 2F, frames] -> magnitude exp(x[:, :F]), phase sin(x[:, F:]) -> iSTFT."""
    F_ = n_fft // 2 + 1
    use_triton("istft_exp_sin", x, supported=False, reason="no Triton kernel yet")
    return istft_mag_phase(torch.exp(x[:, :F_]), torch.sin(x[:, F_:]), n_fft, hop)


def draw_source_noise(batch: int, length: int, harmonics: int, generator: torch.Generator | None,
                      device: torch.device | str, dtype: torch.dtype = torch.float32):
    """The harmonic source's random draws, in the order and shapes the reference (StyleTTS2/Kokoro SineGen
    and SourceModuleHnNSF) draws them from one generator: initial phases U[0,1) [B, harmonics] (the
    fundamental's forced to 0), then noise N(0,1) [B, T, harmonics]. The reference fills its noise with
    randn_like of a transposed tensor; PyTorch's normal fill takes a different (element-by-element) path
    for non-contiguous tensors than for contiguous ones, so the same layout is filled here. It then draws a third tensor [B, T, 1] that nothing uses; drawn here too so that
    a shared seed stays in step."""
    rand_ini = torch.rand(batch, harmonics, generator=generator, device=device, dtype=dtype)
    rand_ini[:, 0] = 0
    noise = torch.empty(batch, harmonics, length, device=device, dtype=dtype).transpose(1, 2)
    noise.normal_(generator=generator)
    torch.randn(batch, length, 1, generator=generator, device=device, dtype=dtype)
    return rand_ini, noise


def harmonic_source(f0: torch.Tensor, merge_weight: torch.Tensor, merge_bias: torch.Tensor,
                    rand_ini: torch.Tensor, noise: torch.Tensor, *, sample_rate: int, upsample_scale: int,
                    sine_amp: float = 0.1, noise_std: float = 0.003, voiced_threshold: float = 10.0):
    """Neural-source-filter excitation from a sample-rate F0 curve.

    f0 [B, T, 1] (Hz, already upsampled to the audio rate); harmonics k = 1..K (K = merge_weight.shape[1]).
    Phase is integrated at the frame rate (T / upsample_scale) and linearly re-interpolated, as the
    reference does, so that parity is exact; voiced where f0 > voiced_threshold. Returns
    tanh(merge_weight · (sines·uv + noise·amp) + merge_bias) [B, T, 1].
    """
    use_triton("harmonic_source", f0, supported=False, reason="no Triton kernel yet")
    K = merge_weight.shape[-1]
    harmonics = torch.arange(1, K + 1, device=f0.device, dtype=f0.dtype)
    rad = (f0 * harmonics / sample_rate) % 1
    rad[:, 0, :] = rad[:, 0, :] + rand_ini
    rad = torch.nn.functional.interpolate(rad.transpose(1, 2), scale_factor=1 / upsample_scale, mode="linear")
    phase = torch.cumsum(rad, dim=-1) * 2 * torch.pi
    phase = torch.nn.functional.interpolate(phase * upsample_scale, scale_factor=upsample_scale, mode="linear")
    sines = torch.sin(phase).transpose(1, 2) * sine_amp
    uv = (f0 > voiced_threshold).to(f0.dtype)
    amp = uv * noise_std + (1 - uv) * sine_amp / 3
    excitation = sines * uv + amp * noise
    return torch.tanh(torch.nn.functional.linear(excitation, merge_weight, merge_bias))
