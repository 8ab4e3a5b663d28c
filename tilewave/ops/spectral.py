"""Spectral ops: STFT/iSTFT with a periodic Hann window, center=True reflect padding, mel front-ends and the
harmonic source. Triton kernels in tilewave/kernels/spectral/ and kernels/source.py; PyTorch elsewhere."""
from __future__ import annotations

import torch

from tilewave import precision
from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.source import harmonic_source_torch
from tilewave.reference.spectral import hz_to_mel, mel_to_hz, slaney_mel_filterbank  # noqa: F401 (model-side helpers)


def _hann(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.hann_window(n, periodic=True, device=like.device, dtype=like.dtype)


def _kernel_dtype(*tensors: torch.Tensor) -> bool:
    return all(t.dtype in (torch.float32, torch.float16, torch.bfloat16) for t in tensors)


def stft_mag_phase(x: torch.Tensor, n_fft: int, hop: int, win_length: int | None = None):
    """x [B, N] -> (magnitude, phase), each [B, n_fft // 2 + 1, frames]; phase = atan2(im, re)."""
    win_length = win_length or n_fft
    if use_triton("stft", x, supported=x.dim() == 2 and _kernel_dtype(x) and x.shape[-1] > n_fft // 2,
                  reason="needs a [B, N] float signal longer than n_fft // 2"):
        return kernels("spectral").stft(x.contiguous(), n_fft, hop, win_length, precision=precision.current())
    spec = torch.stft(x, n_fft, hop, win_length, window=_hann(win_length, x), center=True,
                      pad_mode="reflect", return_complex=True)
    return spec.abs(), spec.angle()


def istft_mag_phase(magnitude: torch.Tensor, phase: torch.Tensor, n_fft: int, hop: int,
                    win_length: int | None = None) -> torch.Tensor:
    """Inverse of stft_mag_phase (overlap-add divided by the window-square sum): [B, F, frames] -> [B, N]."""
    win_length = win_length or n_fft
    if use_triton("istft", magnitude, phase, supported=magnitude.dim() == 3 and hop <= n_fft
                  and magnitude.shape == phase.shape and _kernel_dtype(magnitude, phase),
                  reason="needs [B, F, T] float magnitude and phase of one shape, hop <= n_fft"):
        return kernels("spectral").istft(magnitude.contiguous(), phase.contiguous(), n_fft, hop, win_length,
                                         precision.current())
    spec = torch.polar(magnitude, phase)
    return torch.istft(spec, n_fft, hop, win_length, window=_hann(win_length, magnitude), center=True)


def istft_exp_sin(x: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
    """The iSTFTNet generator tail: x [B, 2F, frames] -> magnitude exp(x[:, :F]), phase sin(x[:, F:]) -> iSTFT."""
    F_ = n_fft // 2 + 1
    if use_triton("istft_exp_sin", x, supported=x.dim() == 3 and x.shape[1] == 2 * F_ and hop <= n_fft
                  and _kernel_dtype(x), reason="needs x [B, 2·(n_fft//2 + 1), T] float, hop <= n_fft"):
        return kernels("spectral").istft_exp_sin(x.contiguous(), n_fft, hop, precision.current())
    return istft_mag_phase(torch.exp(x[:, :F_]), torch.sin(x[:, F_:]), n_fft, hop)


def mel_spectrogram(x: torch.Tensor, mel_basis: torch.Tensor, n_fft: int, hop: int, win_length: int | None = None,
                    *, magnitude: bool, center: bool, eps: float = 1e-5, reflect_pad: int = 0,
                    magnitude_eps: float = 1e-9) -> torch.Tensor:
    """Log-mel spectrogram [B, n_mels, frames] of x [B, N]: log(clamp(mel_basis @ S, min=eps)) with
    S = re² + im² (power) or, when magnitude, sqrt(re² + im² + magnitude_eps) (amplitude).

    Padding is reflect padding on both sides: n_fft // 2 when center (torch.stft's center=True), else
    reflect_pad (0 = none). BigVGAN's convention is center=False, reflect_pad=(n_fft - hop) // 2, magnitude=True.
    """
    win_length = win_length or n_fft
    pad = n_fft // 2 if center else reflect_pad
    if use_triton("mel_spectrogram", x, mel_basis,
                  supported=x.dim() == 2 and _kernel_dtype(x, mel_basis) and x.shape[-1] > pad,
                  reason="needs a [B, N] float signal longer than the padding"):
        return kernels("spectral").mel_spectrogram(x.contiguous(), mel_basis.float().contiguous(), n_fft, hop,
                                                   win_length, pad, magnitude, magnitude_eps, eps, precision.current())
    xp = torch.nn.functional.pad(x[:, None], (pad, pad), mode="reflect")[:, 0] if pad else x
    spec = torch.stft(xp, n_fft, hop, win_length, window=_hann(win_length, x), center=False, return_complex=True)
    s = spec.real ** 2 + spec.imag ** 2
    if magnitude:
        s = torch.sqrt(s + magnitude_eps)
    return torch.log(torch.clamp(torch.matmul(mel_basis.to(s.dtype), s), min=eps))


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
    The Triton kernel integrates the phase in float64 (the reference's float32 phase drifts by ~0.1 rad at
    10 s); the PyTorch path repeats the reference's float32 operations bit for bit.
    """
    kw = dict(sample_rate=sample_rate, upsample_scale=upsample_scale, sine_amp=sine_amp, noise_std=noise_std,
              voiced_threshold=voiced_threshold)
    if use_triton("harmonic_source", f0, merge_weight, merge_bias, rand_ini, noise,
                  supported=f0.dtype == torch.float32 and f0.shape[1] % upsample_scale == 0,
                  reason="needs float32 f0 whose length is a multiple of upsample_scale"):
        return kernels("source").harmonic_source(f0.contiguous(), merge_weight, merge_bias, rand_ini.contiguous(),
                                                 noise, **kw)
    return harmonic_source_torch(f0, merge_weight, merge_bias, rand_ini, noise, **kw)
