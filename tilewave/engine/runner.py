"""KokoroRunner: how the engine runs a KokoroModel on its device, by one BatchPolicy (engine.policy).

The model is the network only: the forward of one item, and of a padded batch with the lengths that keep the
padding out of each item's result. The runner owns what depends on the device and the traffic: CUDA graphs over
bucketed shapes (ops.graphs), the padding to their buckets, and whether a batch runs as one padded pass or as its
items one after another. Each session has its own runner (and so its own graphs); the model may be shared
(engine.session.load_model keeps one per weights and device).

    runner = KokoroRunner(model, BatchPolicy(), cuda_graphs=True)
    out = runner.forward(ids, ref_s, 1.0, generator)           # KokoroModel.forward's arguments and result
    outs = runner.forward_batch(ids_list, ref_s, speeds, gens)  # KokoroModel.forward_batch's, padded or not
"""
from __future__ import annotations

import torch

from tilewave import precision
from tilewave.engine.policy import BatchPolicy
from tilewave.models.kokoro.model import KokoroModel, KokoroOutput, padded_axis
from tilewave.ops.dispatch import current_backend


class KokoroRunner:
    """A KokoroModel's forwards as `policy` says: from CUDA graphs where use_cuda_graphs() was called on a GPU
    model, a batch padded or one item after another (forward_batch's `padded`)."""

    def __init__(self, model: KokoroModel, policy: BatchPolicy = BatchPolicy(), cuda_graphs: bool = False,
                 max_graphs: int | None = None) -> None:
        self.model, self.policy = model, policy
        self.graphs = None  # a GraphCache once use_cuda_graphs() is called
        if cuda_graphs:
            self.use_cuda_graphs(max_graphs)

    def use_cuda_graphs(self, max_graphs: int | None = None) -> "KokoroRunner":
        """Replay forwards on a GPU from CUDA graphs as the policy says (see ops.graphs): the token stages from a
        graph per token bucket, then, for items of up to policy.max_frames decoder frames, the frame stages and the
        generator from graphs per frame bucket; a single item always, a padded batch when policy.padded_batches.
        Each graphed pass runs on the padded bucket with the lengths that keep padding out of the result (the
        masked passes of a padded batch); between them the one read-back of the durations, the harmonic source
        (random draws) and the iSTFT stay eager on each item's own length. A profiled call (profile= given) runs its
        stages before the generator eagerly, so that each is timed. max_graphs: the cache's bound in graphs
        (default: every bucket's, policy.max_graphs). On a CPU model: nothing (no graphs)."""
        from tilewave.ops.graphs import GraphCache

        policy = self.policy
        self.graphs = (GraphCache(max_graphs or policy.max_graphs, max_bytes=policy.max_bytes,
                                  branch_streams=policy.branch_streams)
                       if self.model.device.type == "cuda" else None)
        return self

    # -- KokoroModel's calls --------------------------------------------------------------------------
    @torch.no_grad()
    def features(self, input_ids: torch.Tensor, ref_s: torch.Tensor, speed: float = 1.0, profile=None,
                 durations: torch.Tensor | None = None, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
        """KokoroModel.features, from graphs where they take it."""
        durations = self.model._check_single(input_ids, ref_s, speed, durations, dtype)
        f = self._features([input_ids[0]], ref_s, [speed], profile, durations, dtype)
        return dict(f, durations=f["durations"][0])

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, ref_s: torch.Tensor, speed: float = 1.0,
                generator: torch.Generator | None = None, profile=None,
                keep_intermediates: bool = False, durations: torch.Tensor | None = None,
                dtype: torch.dtype = torch.float32) -> KokoroOutput:
        """KokoroModel.forward, from graphs where they take it."""
        f = self.features(input_ids, ref_s, speed, profile, durations, dtype)
        har, spec, audio = self._generate(f, ref_s, [generator], profile, dtype)
        keep = dict(f, har=har, spectrum=spec) if keep_intermediates else {}
        return KokoroOutput(audio=audio[0], durations=f["durations"], intermediates=keep)

    @torch.no_grad()
    def forward_batch(self, input_ids: list[torch.Tensor], ref_s: torch.Tensor, speeds, generators,
                      profile=None, padded: bool | None = None, dtype: torch.dtype = torch.float32) -> list[KokoroOutput]:
        """KokoroModel.forward_batch's items (the same arguments and promises), as one padded pass or one after
        another through forward. padded: as given, or None: padded on a GPU, one after another on a CPU, where the
        work is compute-bound and padding only adds to it (benchmarks/RESULTS.md), and one after another on a GPU
        with graphs when the batch has fewer than policy.padded_min items."""
        model = self.model
        model._check_batch(input_ids, ref_s, speeds, generators)
        model._check_dtype(dtype)
        speeds = [float(v) for v in speeds]
        if not self._runs_padded(len(input_ids), padded):
            return [self.forward(ids[None], ref_s[i:i + 1], speeds[i], generators[i], profile, dtype=dtype)
                    for i, ids in enumerate(input_ids)]
        f = self._features(list(input_ids), ref_s, speeds, profile, dtype=dtype)
        _, _, audio = self._generate(f, ref_s, list(generators), profile, dtype)
        return [KokoroOutput(audio=a, durations=d) for a, d in zip(audio, f["durations"])]

    # -- the choices ----------------------------------------------------------------------------------
    def _runs_padded(self, items: int, padded: bool | None) -> bool:
        """forward_batch's choice: `padded` as given, else on a GPU unless graphs replay each of fewer than
        policy.padded_min items faster than an eager padded pass runs them all."""
        if padded is not None:
            return padded
        return self.model.device.type == "cuda" and not (self.graphs is not None and items < self.policy.padded_min)

    def _graphs_take(self, items: int) -> bool:
        """Whether a forward of `items` items runs its stages from graphs: one item on a graphed runner; a padded
        batch where the policy says so and a batch bucket holds it."""
        if self.graphs is None:
            return False
        return items == 1 or (self.policy.padded_batches and self.policy.batch_bucket(items) is not None)

    def _features(self, input_ids: list[torch.Tensor], ref_s, speeds: list[float], profile, durations=None,
                  dtype=torch.float32):
        if profile is None and self._graphs_take(len(input_ids)):
            return self._features_graphed(input_ids, ref_s, speeds, durations, dtype)
        return self.model._features(input_ids, ref_s, speeds, profile, durations, dtype)

    def _generate(self, f, ref_s, generators, profile, dtype):
        return self.model._generate(f, ref_s, generators, profile, dtype,
                                    self._spectrum if self._graphs_take(len(f["frames"])) else None)

    # -- from graphs ----------------------------------------------------------------------------------
    def _features_graphed(self, input_ids: list[torch.Tensor], ref_s, speeds: list[float], durations, dtype):
        """KokoroModel._features from CUDA graphs (see use_cuda_graphs): the same dict, its tensors on the axes an
        eager padded pass gives (a single item's own lengths). B items run in the graphs of their batch bucket Bb,
        the last item repeated into the spare rows (its durations too, so the spare rows' frames never set the frame
        bucket). Its arithmetic is a padded batch's masked passes (ALBERT with its key mask, the LSTMs, norms and
        convs with lengths), so the durations are forward's and the features equal forward's to float32 rounding;
        the audio then lies within the float32 spectral bound of forward's (the harmonic source's phase integral
        carries F0's rounding into the waveform, as in a padded batch)."""
        model, policy = self.model, self.policy
        dev = model.device
        B = len(input_ids)
        Bb = policy.batch_bucket(B)
        rows = list(range(B)) + [B - 1] * (Bb - B)
        n_tok = [int(t.shape[0]) for t in input_ids]
        nb = -(-max(n_tok) // policy.token_bucket) * policy.token_bucket
        ids_b = torch.zeros(Bb, nb, dtype=torch.long)
        for r, b in enumerate(rows):
            ids_b[r, :n_tok[b]] = input_ids[b]
        ids_b = ids_b.to(dev)
        ref_s = ref_s.to(dev, torch.float32)[rows]
        s_pro, s_dec = ref_s[:, model.cfg.style_dim:], ref_s[:, :model.cfg.style_dim]
        # On CUDA `frames / speed` (a Python float) multiplies by 1 / speed, taken in double and rounded to float32
        # (ATen's division by a CPU scalar; the CUDA test checks it); the graph takes that reciprocal as a tensor,
        # so every speed replays one graph with forward's rounding
        inv_speed = torch.tensor([[1.0 / speeds[b]] for b in rows], dtype=torch.float32).to(dev)
        tok_lengths = torch.tensor([n_tok[b] for b in rows], dtype=torch.long).to(dev)
        mode = (precision.current(), current_backend(), model.bert.fused_on, model.time_major_on)  # what graphs record
        after = 0 if Bb == 1 else policy.record_after
        bert, d_en, d, logits, dur_b, t_en = self.graphs.run(("tokens", nb) + mode + (Bb,), model.token_stages,
                                                             (ids_b, tok_lengths, s_pro, inv_speed), after)
        if durations is not None:
            dur_b.zero_()
            for r, b in enumerate(rows):
                dur_b[r, :n_tok[b]] = durations[b].to(dev, torch.long)
        elif Bb > B:
            dur_b[B:] = dur_b[B - 1]
        frames = dur_b[:B].sum(dim=1).tolist()  # the one read-back: the frame counts decide every later shape
        t_ax, f_ax = padded_axis(n_tok), padded_axis(frames)
        out = {"bert": bert[:B, :t_ax], "d_en": d_en[:B, :t_ax], "d": d[:B, :t_ax], "duration_logits": logits[:B, :t_ax],
               "durations": [dur_b[b, :n_tok[b]] for b in range(B)], "frames": frames}
        fb = -(-2 * max(frames) // policy.frame_bucket) * policy.frame_bucket // 2
        if 2 * fb > policy.max_frames or (Bb > 1 and 2 * fb * Bb > policy.max_batch_frames):
            # long items: their frame stages eager (their generator is, too)
            return model._frame_features(out, lambda: t_en[:B], s_pro[:B], s_dec[:B], dtype)
        frame_lengths = torch.tensor([frames[b] for b in rows], dtype=torch.long).to(dev)

        def frame_stages(d, t_en, dur_b, frame_lengths, s_pro, s_dec):
            return model.frame_stages(d, t_en, dur_b, frame_lengths, s_pro, s_dec, fb, dtype)

        # its inputs are token-bucket long: the token bucket is part of what the graph recorded
        en, f0, n_curve, asr, x = self.graphs.run(("frames", fb, nb, dtype) + mode + (Bb,), frame_stages,
                                                  (d, t_en, dur_b, frame_lengths, s_pro, s_dec), after)
        return dict(out, en=en[:B, :, :f_ax], F0=f0[:B, :2 * f_ax], N=n_curve[:B, :2 * f_ax],
                    asr=asr[:B, :, :f_ax], decoder=x[:B, :, :2 * f_ax])

    def _spectrum(self, gen, x, s, har, n_frames: list[int], har_frames: list[int]):
        """KokoroModel._generate's `spectrum`: the generator from a graph where one takes this batch, else None."""
        if not self._spectrum_fits(x.shape[-1], len(n_frames)):
            return None
        return self._spectrum_graphed(gen, x, s, har, n_frames, har_frames)

    def _spectrum_fits(self, decoder_frames: int, items: int) -> bool:
        """Whether a generator over this many decoder frames (the padded axis) replays from a graph."""
        policy = self.policy
        nb = -(-decoder_frames // policy.frame_bucket) * policy.frame_bucket
        Bb = policy.batch_bucket(items)
        return decoder_frames <= policy.max_frames and (Bb == 1 or nb * Bb <= policy.max_batch_frames)

    def _spectrum_graphed(self, gen, x, s, har, n_frames: list[int], har_frames: list[int]):
        """gen.spectrum for B items from the graph of their batch and frame bucket: x [B, 512, n], har [B, 22, h]
        zero-padded to the bucket (the last item repeated into the spare rows), the true lengths as device tensors
        (every op of spectrum takes them there). Returns (spectrum, its frames per item; None for a single, whose
        spectrum is cut to its own frames)."""
        policy = self.policy
        B, n, h = x.shape[0], x.shape[-1], har.shape[-1]
        Bb = policy.batch_bucket(B)
        rows = list(range(B)) + [B - 1] * (Bb - B)
        nb = -(-n // policy.frame_bucket) * policy.frame_bucket
        hb = h + (nb - n) * (gen.samples_per_frame // self.model.cfg.gen_istft_hop_size)

        def out_frames(frames):  # the conv_post output's frames for `frames` decoder frames (spectrum's lengths)
            for i, up in enumerate(gen.ups):
                frames = up.out_lengths(frames) + (1 if i == len(gen.ups) - 1 else 0)
            return frames

        lengths = torch.tensor([2 * n_frames[b] for b in rows], dtype=torch.long).to(x.device)
        har_lengths = torch.tensor([har_frames[b] for b in rows], dtype=torch.long).to(x.device)
        pad = torch.nn.functional.pad
        # what a graph recorded depends on the precision and backend in force when it was recorded
        key = ("generator", nb, x.dtype, precision.current(), current_backend(), self.model.time_major_on, Bb)
        spec, = self.graphs.run(
            key, lambda *a: (gen.spectrum(*a)[0],),
            (pad(x[rows], (0, nb - n)), s[rows], pad(har[rows], (0, hb - h)), lengths, har_lengths),
            0 if Bb == 1 else policy.record_after)
        if B == 1:
            return spec[:, :, :out_frames(2 * n_frames[0])], None
        return spec[:B], torch.tensor([out_frames(2 * v) for v in n_frames])
