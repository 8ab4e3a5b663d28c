"""Spectral kernels: STFT, inverse STFT and log-mel spectrograms (the harmonic source is tilewave.kernels.source).

stft                  x [B, N] -> magnitude |X|, phase atan2(Im X, Re X), each [B, F, T], F = n_fft//2 + 1:
                      X[b, k, t] = Σ_n w[n]·xp[b, t·hop + n]·e^{-2πi·k·n/n_fft}, xp = x reflect-padded by
                      `pad` on both sides (n_fft//2 is torch.stft's center=True), T = 1 + (N + 2·pad − n_fft)//hop,
                      w the periodic Hann window of win_length zero-padded (centred) to n_fft.
istft                 (magnitude, phase) [B, F, T] -> y [B, hop·(T−1) + n_fft − 2·(n_fft//2)]: overlap-add of the
                      windowed inverse real DFTs divided by Σ_t w²[p − t·hop] (torch.istft, center=True).
istft_exp_sin         x [B, 2F, T] -> istft(exp(x[:, :F]), sin(x[:, F:])): the iSTFTNet generator tail, one kernel.
mel_spectrogram       log(max(M·(Re² + Im²), eps)), M the filterbank [n_mels, F]; out [B, n_mels, T].
mel_spectrogram_magnitude  the same with √(Re² + Im² + mag_eps) (amplitude) in place of the power.

Kernel forms:
- Small transforms (n_fft <= DIRECT_MAX_NFFT, Kokoro's n_fft 20 / hop 5 / 11 bins): a direct DFT in registers.
  The inverse is one pass. Rows form (_istft_rows_kernel): a thread takes F >= overlap − 1 consecutive frames and
  owns their F·hop output samples, so the overlap-add stays in its registers except for the taps that fall past
  its last frame, summed and moved one thread down by a warp shuffle (15 values per thread for n_fft 20 / hop 5);
  the DFT coefficients are compile-time constants (FMA immediates: no table loads or registers), the inverse real
  DFT takes even- and odd-bin partial sums of a quarter of the tap pairs (pair n_fft/2 − m reuses pair m's with
  signs: ~5 FMAs per tap instead of ~9), and programs away from the signal's ends run without masks and with a
  constant window envelope (their own launch and binary; the ends' masked programs the other). Frame-vector form (_istft_ola_kernel, for overlaps too long for a thread's registers):
  a program takes a run of frames as vectors, evaluates the taps with FMAs on scalar coefficients loaded from
  tables, and moves tap u + r·hop of frame t − r onto row t by tl.gather (through shared memory).
- Power-of-two n_fft >= 1024 (speech: 1024 / hop 256): a four-step FFT, n_fft = N1·N2 (32·32), on tensor cores or
  FMAs (_fft_tile): a DFT-N1 GEMM over a tile of frames, twiddles, a per-frame transpose, a DFT-N2 GEMM for the
  first N2/2 outputs plus the Nyquist bin as a reduction. Per frame 2·n_fft·(N1 + N2) real MACs (1024: 131k)
  against 2·n_fft·(n_fft/2 + 1) = 1.05M for a direct DFT. Roofline at 1024/256, float32, [16, 480000]: 7.9 GFLOP
  and 153 MB (polar out), so both the FMA work ("ieee") and the tensor-core work ("tf32x3", 3 MMAs per product)
  take longer than the memory traffic: compute-bound, not a copy-bandwidth kernel.
  A log-mel adds only 2·F·n_mels MACs per frame (100 mels: 0.1M) and the float32 spectrum's round trip (2·4·F B per
  frame) to that. The four-step kernels are latency-bound (few frames per program, several dependent tl.dot and
  layout steps), not at either roofline; timings against cuFFT and torch: benchmarks/RESULTS.md.
  The inverse writes windowed frames to a float32 scratch [B, T, n_fft] that a gather kernel overlap-adds;
  the mel variant writes the float32 power (or magnitude) spectrum [B, T, F] and a filterbank GEMM takes the log.
- Other sizes: a DFT as a GEMM, frames gathered from the signal (reflect padding folded into the gather) times a
  precomputed window·cos / −window·sin basis with tl.dot; the mel variant multiplies each bin tile into the
  filterbank inside the same program; the inverse computes windowed frames against the inverse basis into a
  float32 scratch, then overlap-adds them in a second gather kernel.
The DFT runs on float32 operands whatever the storage dtype: phase is ill-conditioned near zero-magnitude bins,
and a 16-bit basis would move it. For float32 data tf32x3 and tf32 are opt-in (tilewave.precision.scope);
the FFT kernels give 16-bit data tf32 dots when "ieee" is asked for (see _fft_precision).
Launch invariants: inputs contiguous, reflect padding needs pad < N.

Files: common.py (window, bases, atan2, the spectrum tile, the shared jit helpers), fft.py (the four-step FFT
forms), dft.py (direct and GEMM DFTs, `stft`), mel.py (the fused and two-pass mels, the Slaney filterbank),
inverse.py (the small, FFT and GEMM inverse forms, `istft`, `istft_exp_sin`), cases.py (registration).
"""
from tilewave.kernels.spectral import cases  # noqa: F401 (registers the spectral kernels)
from tilewave.kernels.spectral.common import atan2, padded_hann
from tilewave.kernels.spectral.dft import DIRECT_MAX_NFFT, stft, stft_oracle, stft_torch
from tilewave.kernels.spectral.fft import FFT_TILES, fft_config, fft_split
from tilewave.kernels.spectral.inverse import (istft, istft_exp_sin, istft_exp_sin_oracle, istft_exp_sin_torch,
                                               istft_oracle, istft_rows_config, istft_rows_launch, istft_torch)
from tilewave.kernels.spectral.mel import mel_oracle, mel_spectrogram, mel_spectrogram_magnitude, mel_torch
from tilewave.reference.spectral import hz_to_mel, mel_to_hz, slaney_mel_filterbank

__all__ = ["DIRECT_MAX_NFFT", "FFT_TILES", "atan2", "fft_config", "fft_split", "hz_to_mel", "istft", "istft_exp_sin",
           "istft_exp_sin_oracle", "istft_exp_sin_torch", "istft_oracle", "istft_rows_config", "istft_rows_launch",
           "istft_torch", "mel_oracle", "mel_spectrogram", "mel_spectrogram_magnitude", "mel_to_hz", "mel_torch",
           "padded_hann", "slaney_mel_filterbank", "stft", "stft_oracle", "stft_torch"]
