"""Vocoding: log-mel (or a waveform, for copy-synthesis) -> BigVGAN -> waveform, in bounded memory.

Long inputs run in chunks of `chunk_frames` mel frames, each extended by the generator's receptive field
(`BigVGAN.context_frames()`) on both sides and trimmed back to its own frames' samples. Every output sample
then sees exactly the mel frames it sees in one unchunked pass (the layers are shift-invariant at frame
granularity and the padding at a chunk's cut lies outside the receptive field of the samples kept), so the
chunks join without seams: chunked and unchunked output agree to float rounding.

A recording given for copy-synthesis is taken as it comes: several channels are averaged to one, and a
rate other than the checkpoint's is converted with soxr (its "HQ" setting: 20-bit precision, linear
phase). What was done is logged on the `tilewave.vocode` logger at WARNING level, which reaches stderr
without any set-up.
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from tilewave import precision as fp32_precision
from tilewave.engine.pipeline import resolve_device
from tilewave.errors import InputError
from tilewave.models.vocoders.bigvgan import BigVGAN
from tilewave.models.vocoders.mel import log_mel
from tilewave.ops.dispatch import counting
from tilewave.profiling import Profiler, StageProfiler

log = logging.getLogger("tilewave.vocode")
DEFAULT_CHUNK_FRAMES = 512  # ~5.5 s at 24 kHz / hop 256; peak memory scales with chunk + 2 x context
CHECKPOINT_HELP = (
    "BigVGAN weights cannot be downloaded by tilewave. Get an official checkpoint folder holding config.json "
    "and bigvgan_generator.pt (e.g. https://huggingface.co/nvidia/bigvgan_v2_24khz_100band_256x, files "
    "config.json and bigvgan_generator.pt) on a machine with internet access, copy the folder here, and pass "
    "--checkpoint FOLDER")


def load_vocoder(checkpoint: str | Path | None, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32) -> BigVGAN:
    if checkpoint is None:
        raise InputError(f"no BigVGAN checkpoint given. {CHECKPOINT_HELP}")
    return BigVGAN.from_checkpoint(checkpoint, device=device, dtype=dtype)


class Vocoder:
    """A BigVGAN from an official checkpoint folder on a device, in a precision mode, with its own profiler and
    placement report: what `tilewave vocode` runs. `dtype`: its storage type; `profile`: True for a new stage
    profiler, or any object with `.stage(name)`."""

    def __init__(self, checkpoint, device: str | torch.device | None = None,
                 precision: str = fp32_precision.DEFAULT, dtype: str = "float32", profile=False) -> None:
        self.device = resolve_device(device)
        self.precision = fp32_precision.check(precision)
        self.model = load_vocoder(checkpoint, device=self.device,
                                  dtype=fp32_precision.check_dtype(dtype, what="vocoder dtype"))
        self.profiler = StageProfiler(self.device) if profile is True else (profile or None)
        self._placements: Counter = Counter()  # (op, where, why) -> calls (ops.dispatch.counting)

    @property
    def sampling_rate(self) -> int:
        return self.model.config.sampling_rate

    def vocode_files(self, paths: Sequence, chunk_frames: int = DEFAULT_CHUNK_FRAMES) -> list[torch.Tensor]:
        """Audio [B, N] per input file (a wav for copy-synthesis, or a mel .npy)."""
        with torch.inference_mode(), fp32_precision.scope(self.precision), counting(self._placements):
            return [vocode_file(self.model, path, chunk_frames, self.profiler) for path in paths]

    def placements(self) -> list[tuple[str, str, str, int]]:
        """(op, 'triton'|'torch', why, calls) of this vocoder's runs, most frequent first."""
        return [(op, where, why, n) for (op, where, why), n in self._placements.most_common()]


def vocode_mel(model: BigVGAN, mel: torch.Tensor, chunk_frames: int = DEFAULT_CHUNK_FRAMES,
               profiler: Profiler | None = None) -> torch.Tensor:
    """mel [B, num_mels, T] or [num_mels, T] -> audio [B, T * hop] float32 on the CPU, chunk by chunk."""
    if chunk_frames < 1:
        raise InputError(f"chunk_frames must be >= 1, got {chunk_frames}")
    mel = mel if mel.dim() == 3 else mel.unsqueeze(0)
    if mel.dim() != 3 or mel.shape[-1] == 0:
        raise InputError(f"a mel spectrogram is [num_mels, frames] or [batch, num_mels, frames] with at least "
                         f"one frame; got shape {list(mel.shape)}")
    if not torch.isfinite(mel).all():
        raise InputError("the mel spectrogram holds NaN or infinite values; recompute it")
    hop, context, T = model.config.hop, model.context_frames(), mel.shape[-1]
    audio = torch.empty(mel.shape[0], T * hop, dtype=torch.float32)
    for start in range(0, T, chunk_frames):
        stop = min(T, start + chunk_frames)
        lo, hi = max(0, start - context), min(T, stop + context)
        y = model(mel[..., lo:hi], profiler=profiler)[:, 0]
        audio[:, start * hop: stop * hop] = y[:, (start - lo) * hop: (stop - lo) * hop].float().cpu()
    return audio


def wav_to_mel(model: BigVGAN, wav: torch.Tensor, sample_rate: int) -> torch.Tensor:
    """wav [N] or [B, N] at the model's rate -> log-mel [B, num_mels, N // hop] as the model was trained on."""
    h = model.config
    if sample_rate != h.sampling_rate:
        raise InputError(f"the audio is at {sample_rate} Hz but this BigVGAN works at {h.sampling_rate} Hz; "
                         "resample it first with conform_wav (vocode_file and `tilewave vocode` do that for a file)")
    n = wav.shape[-1] // h.hop_size * h.hop_size  # whole frames, so that the output has the input's length
    if n == 0:
        raise InputError(f"the audio has {wav.shape[-1]} samples, fewer than one hop ({h.hop_size})")
    return log_mel(wav[..., :n], sampling_rate=h.sampling_rate, n_fft=h.n_fft, num_mels=h.num_mels,
                   hop_size=h.hop_size, win_size=h.win_size, fmin=h.fmin, fmax=h.fmax)


def read_input(path: str | Path) -> tuple[str, np.ndarray | torch.Tensor, int | None]:
    """('wav', samples [N, channels] float32, rate) or ('mel', [B, num_mels, T] float32, None) from a file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"input {str(path)!r} does not exist")
    if path.suffix.lower() == ".npy":
        try:
            mel = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InputError(f"{str(path)!r} is not a NumPy array file: {exc}") from None
        if mel.ndim not in (2, 3) or not np.issubdtype(mel.dtype, np.floating):
            raise InputError(f"{str(path)!r} holds a {mel.dtype} array of shape {list(mel.shape)}; a mel is a float "
                             f"array [num_mels, frames] or [batch, num_mels, frames]")
        mel = torch.from_numpy(mel.astype(np.float32))
        return "mel", mel if mel.dim() == 3 else mel.unsqueeze(0), None
    import soundfile

    try:
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except RuntimeError as exc:
        raise InputError(f"cannot read audio {str(path)!r}: {exc}; give a WAV/FLAC file or a mel .npy") from None
    return "wav", samples, rate


def conform_wav(samples: np.ndarray, rate: int, target_rate: int, name: str = "the audio") -> torch.Tensor:
    """samples [N, channels] at `rate` -> mono float32 [~N * target_rate / rate] at `target_rate`, saying on
    the log what was changed."""
    done = []
    if samples.shape[1] > 1:
        done.append(f"mixed {samples.shape[1]} channels to mono")
    mono = samples.mean(axis=1, dtype=np.float32)
    if rate != target_rate:
        import soxr

        mono = soxr.resample(mono, rate, target_rate, quality="HQ").astype(np.float32, copy=False)
        done.append(f"resampled from {rate} Hz to {target_rate} Hz (soxr HQ)")
    if done:
        log.warning("%s: %s for this vocoder", name, " and ".join(done))
    return torch.from_numpy(np.ascontiguousarray(mono))


def vocode_file(model: BigVGAN, path: str | Path, chunk_frames: int = DEFAULT_CHUNK_FRAMES,
                profiler: Profiler | None = None) -> torch.Tensor:
    """A wav (copy-synthesis) or a mel .npy -> audio [B, N] float32."""
    kind, data, rate = read_input(path)
    if kind == "wav":
        rate_here = model.config.sampling_rate
        mel = wav_to_mel(model, conform_wav(data, rate, rate_here, str(path)), rate_here)
    else:
        mel = data
    return vocode_mel(model, mel, chunk_frames, profiler)
