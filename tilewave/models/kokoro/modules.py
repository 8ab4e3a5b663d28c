"""Kokoro-82M building blocks: torch Modules that hold the parameters (named as in the official KModel,
weight norm folded) and compute through tilewave.ops, so that each op runs its Triton kernel on CUDA.

Layouts: channels-first [B, C, T] between convs, batch-first [B, T, C] around LSTMs and ALBERT.

Batches of different lengths: `lengths` (LongTensor [B], or None when every item fills the axis) gives
each item's valid steps on the axis a module works on. Everything that looks across time sees only an
item's own steps, so each item computes what it would alone: LSTMs stop at each item's length (the
backward direction starts at its last step), instance-norm statistics cover its own frames, and every
conv / transposed-conv input is zero past its length (the zeros a solo run pads with). Outputs past an
item's length are left unspecified; the next consumer masks them. (ALBERT runs item by item: see
KokoroModel._albert.)
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import weakref

import torch
from torch import nn
from torch.nn import functional as F

from tilewave import precision
from tilewave.ops import activation as act
from tilewave.ops import attention, conv, graphs, norm, rnn, spectral
from tilewave.ops.linear import linear as fused_linear
from tilewave.models.kokoro.config import KokoroConfig

# The official residual blocks scale by torch.rsqrt(torch.tensor(2)) in float32; the same constant here.
_INV_SQRT2 = float(torch.rsqrt(torch.tensor(2.0)))


def zero_padding(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """x [B, C, T] with frames t >= lengths[b] set to 0 (x itself when lengths is None)."""
    if lengths is None:
        return x
    keep = torch.arange(x.shape[-1], device=x.device)[None, :] < lengths[:, None]
    return x.masked_fill(~keep[:, None, :], 0.0)


def _per_item(s: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """F.linear(s, weight, bias), one item at a time: a [1, 128] product rounds differently from a [B, 128] one
    on the CPU, and the harmonic source turns rounding-level changes into waveform changes (it integrates F0 into
    thousands of radians of phase), so each item repeats its solo arithmetic."""
    if s.shape[0] == 1:
        return F.linear(s, weight, bias)
    return torch.cat([F.linear(s[b:b + 1], weight, bias) for b in range(s.shape[0])])


def style_affine(fc: nn.Linear, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(gamma, beta) = fc(s).chunk(2), each item its own product (_per_item)."""
    return _per_item(s, fc.weight, fc.bias).chunk(2, dim=1)


def adain_scale_shift(gamma, beta, norm_weight, norm_bias) -> tuple[torch.Tensor, torch.Tensor]:
    """AdaIN's style affine folded into its norm's: (1 + gamma) * (w * IN(x) + b) + beta = scale * IN(x) + shift,
    element by element as the official model rounds it."""
    g = 1 + gamma
    return g * norm_weight, g * norm_bias + beta


# Devices where a stage's AdaIN1d affines are computed together (style_affines): on a GPU each AdaIN1d's own (fc's
# gemv, then 1 + gamma, its products with the norm's weight and bias, + beta) is five kernels, ~350 of a graphed
# forward's launches; stacked they are one gemv an item and four element-wise
# kernels a stage. Not on the CPU, whose GEMMs pick their path by shape: there each module keeps the official
# model's own product, which the parity tests compare to the bit.
AFFINES_STACKED_ON = ("cuda",)
_affines: contextvars.ContextVar = contextvars.ContextVar("tilewave_kokoro_affines", default=None)
_stacks: "weakref.WeakKeyDictionary[nn.Module, _AffineStack]" = weakref.WeakKeyDictionary()


class _AffineStack:
    """The AdaIN1d modules under some parts of a model, their fc weights stacked (every gamma row, then every
    beta row) with the norms' weights and biases, built once and kept while none of those parameters changes."""

    def __init__(self, parts) -> None:
        self.modules = [m for part in parts for m in part.modules() if isinstance(m, AdaIN1d)]
        self.params = [p for m in self.modules for p in (m.fc.weight, m.fc.bias, m.norm.weight, m.norm.bias)]
        self.key = self._key()
        sizes = [m.norm.weight.shape[0] for m in self.modules]
        self.starts = [sum(sizes[:i]) for i in range(len(sizes))]
        self.sizes, self.rows = sizes, sum(sizes)
        # outside inference mode (a session's calls run in it): kept across calls, like the weights themselves
        with torch.inference_mode(False), torch.no_grad():
            w = [m.fc.weight for m in self.modules]
            b = [m.fc.bias for m in self.modules]
            self.weight = torch.cat([x[:c] for x, c in zip(w, sizes)] + [x[c:] for x, c in zip(w, sizes)])
            self.bias = torch.cat([x[:c] for x, c in zip(b, sizes)] + [x[c:] for x, c in zip(b, sizes)])
            self.norm_weight = torch.cat([m.norm.weight for m in self.modules])
            self.norm_bias = torch.cat([m.norm.bias for m in self.modules])
            # per row: its module's first row and width, and its place in the module
            dev = self.weight.device
            self.first = torch.cat([torch.full((n,), r0) for r0, n in zip(self.starts, sizes)]).to(dev)
            self.width = torch.cat([torch.full((n,), n) for n in sizes]).to(dev)
            self.place = torch.cat([torch.arange(n) for n in sizes]).to(dev)

    def _key(self):
        return tuple((p.data_ptr(), p._version) for p in self.params)

    def module_major(self, t: torch.Tensor) -> torch.Tensor:
        """[B, rows] -> the same values flat with each module's [B, C_m] block contiguous (B > 1): item b's row r
        goes to B * first[r] + b * width[r] + place[r]. On the device, nothing kept per batch size."""
        B = t.shape[0]
        dest = (self.first * B + self.place) + torch.arange(B, device=t.device)[:, None] * self.width
        out = t.new_empty(t.numel())
        out[dest.reshape(-1)] = t.reshape(-1)
        return out


@contextlib.contextmanager
def style_affines(s: torch.Tensor, *parts: nn.Module):
    """Inside: every AdaIN1d under `parts` called with this very `s` [B, 128] takes its (scale, shift) from one
    product over all of their fc's (on AFFINES_STACKED_ON devices; elsewhere, and for any other s, each computes
    its own). Each item's row is its own [1, 128] product, as style_affine's, so a batch's items keep their solo
    arithmetic; the element-wise steps are AdaIN1d's own, element by element."""
    if s.device.type not in AFFINES_STACKED_ON:
        yield
        return
    stack = _stacks.get(parts[0])
    if stack is None or stack.key != stack._key():
        stack = _stacks[parts[0]] = _AffineStack(parts)
    rows = _per_item(s, stack.weight, stack.bias)
    scale, shift = adain_scale_shift(rows[:, :stack.rows], rows[:, stack.rows:], stack.norm_weight, stack.norm_bias)
    B = s.shape[0]
    if B > 1:
        scale, shift = stack.module_major(scale), stack.module_major(shift)
    table = {}
    for m, r0, n in zip(stack.modules, stack.starts, stack.sizes):
        if B == 1:
            table[m] = (scale[:, r0:r0 + n], shift[:, r0:r0 + n])
        else:
            table[m] = (scale[B * r0:B * (r0 + n)].view(B, n), shift[B * r0:B * (r0 + n)].view(B, n))
    token = _affines.set((s, table))
    try:
        yield
    finally:
        _affines.reset(token)


class Conv1d(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(c_out, c_in // groups, kernel))
        self.bias = nn.Parameter(torch.empty(c_out)) if bias else None
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, x, lengths=None):
        """x [B, C, T], or the time-major input time_major_layout asked for (its producer zeroed past lengths)."""
        if isinstance(x, torch.Tensor):
            x = zero_padding(x, lengths)
        return conv.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def time_major_layout(self, x):
        """ops.conv.time_major_layout for this conv on an input like x."""
        return conv.time_major_layout(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                                      self.groups)

    def out_lengths(self, lengths):
        span = self.dilation * (self.weight.shape[-1] - 1) + 1
        return None if lengths is None else (lengths + 2 * self.padding - span) // self.stride + 1


class ConvTranspose1d(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, padding: int = 0,
                 output_padding: int = 0, groups: int = 1):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(c_in, c_out // groups, kernel))
        self.bias = nn.Parameter(torch.empty(c_out))
        self.stride, self.padding, self.output_padding, self.groups = stride, padding, output_padding, groups

    def forward(self, x, lengths=None):
        return conv.conv1d_transpose(zero_padding(x, lengths), self.weight, self.bias, self.stride, self.padding,
                                     self.output_padding, self.groups)

    def out_lengths(self, lengths):
        k = self.weight.shape[-1]
        return None if lengths is None else (lengths - 1) * self.stride - 2 * self.padding + k + self.output_padding


class BiLSTM(nn.Module):
    """One bidirectional layer, parameters named like torch.nn.LSTM's."""

    def __init__(self, c_in: int, hidden: int):
        super().__init__()
        for suffix in ("", "_reverse"):
            self.register_parameter(f"weight_ih_l0{suffix}", nn.Parameter(torch.empty(4 * hidden, c_in)))
            self.register_parameter(f"weight_hh_l0{suffix}", nn.Parameter(torch.empty(4 * hidden, hidden)))
            self.register_parameter(f"bias_ih_l0{suffix}", nn.Parameter(torch.empty(4 * hidden)))
            self.register_parameter(f"bias_hh_l0{suffix}", nn.Parameter(torch.empty(4 * hidden)))

    def forward(self, x, lengths=None):  # [B, T, I] -> [B, T, 2H]
        return rnn.lstm(x, [
            (self.weight_ih_l0, self.weight_hh_l0, self.bias_ih_l0, self.bias_hh_l0),
            (self.weight_ih_l0_reverse, self.weight_hh_l0_reverse, self.bias_ih_l0_reverse,
             self.bias_hh_l0_reverse)], lengths)


class LayerNorm(nn.Module):
    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(channels)), nn.Parameter(torch.zeros(channels)), eps

    def forward(self, x):  # channels-last
        return norm.layer_norm(x, self.weight, self.bias, self.eps)


# ---------------------------------------------------------------------------------------------------
# ALBERT ("PLBERT")
# ---------------------------------------------------------------------------------------------------
class AlbertEmbeddings(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.n_token, cfg.albert_embedding)
        self.position_embeddings = nn.Embedding(cfg.albert_positions, cfg.albert_embedding)
        self.token_type_embeddings = nn.Embedding(2, cfg.albert_embedding)
        self.LayerNorm = LayerNorm(cfg.albert_embedding, cfg.albert_ln_eps)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.word_embeddings(ids) + self.token_type_embeddings.weight[0]
        x = x + self.position_embeddings.weight[:T]
        return self.LayerNorm(x)


class AlbertAttention(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        H = cfg.albert_hidden
        self.heads = cfg.albert_heads
        self.query, self.key, self.value, self.dense = (nn.Linear(H, H) for _ in range(4))
        self.LayerNorm = LayerNorm(H, cfg.albert_ln_eps)
        self._qkv = None  # (key, weight, bias): query, key and value stacked, for fused passes

    def forward(self, x, valid=None, fused: bool = False):  # valid [B, T] bool: the keys each item attends
        B, T, H = x.shape
        split = lambda t: t.view(B, T, self.heads, H // self.heads).transpose(1, 2)  # noqa: E731
        if fused:
            weight, bias = self._stacked()
            # views of one [B, T, 3H] output (row stride 3H): the attention kernel takes strides
            q, k, v = (split(t) for t in fused_linear(x, weight, bias).split(H, dim=-1))
        else:
            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scale = 1.0 / math.sqrt(H // self.heads)
        ctx = attention.sdpa_bidirectional(q, k, v, valid, scale=scale).transpose(1, 2).reshape(B, T, H)
        if fused:
            return self.LayerNorm(fused_linear(ctx, self.dense.weight, self.dense.bias, residual=x))
        return self.LayerNorm(x + self.dense(ctx))

    def _stacked(self):
        """query, key and value as one [3H, H] product, made again whenever one of their parameters changes (a
        load, a .to()); made outside inference mode, so that it is kept across a session's calls."""
        params = [p for m in (self.query, self.key, self.value) for p in (m.weight, m.bias)]
        key = tuple((p.data_ptr(), p._version, p.device, p.dtype) for p in params)
        if self._qkv is None or self._qkv[0] != key:
            with torch.inference_mode(False), torch.no_grad():
                self._qkv = (key, torch.cat(params[0::2]), torch.cat(params[1::2]))
        return self._qkv[1], self._qkv[2]


class AlbertLayer(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        self.attention = AlbertAttention(cfg)
        self.ffn = nn.Linear(cfg.albert_hidden, cfg.albert_ffn)
        self.ffn_output = nn.Linear(cfg.albert_ffn, cfg.albert_hidden)
        self.full_layer_layer_norm = LayerNorm(cfg.albert_hidden, cfg.albert_ln_eps)

    def forward(self, x, valid=None, fused: bool = False):
        a = self.attention(x, valid, fused)
        if fused:  # the GELU and the residual in the products' epilogues
            h = fused_linear(a, self.ffn.weight, self.ffn.bias, act="gelu_tanh")
            return self.full_layer_layer_norm(fused_linear(h, self.ffn_output.weight, self.ffn_output.bias,
                                                           residual=a))
        return self.full_layer_layer_norm(a + self.ffn_output(act.gelu_tanh(self.ffn(a))))


class AlbertLayerGroup(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        self.albert_layers = nn.ModuleList([AlbertLayer(cfg)])


class AlbertEncoder(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        self.embedding_hidden_mapping_in = nn.Linear(cfg.albert_embedding, cfg.albert_hidden)
        self.albert_layer_groups = nn.ModuleList([AlbertLayerGroup(cfg)])
        self.n_layers = cfg.albert_layers

    def forward(self, x, valid=None, fused: bool = False):
        x = self.embedding_hidden_mapping_in(x)
        layer = self.albert_layer_groups[0].albert_layers[0]
        for _ in range(self.n_layers):  # one set of weights, applied n_layers times
            x = layer(x, valid, fused)
        return x


class Albert(nn.Module):
    """ALBERT's layers; `fused` (Albert.fused_on, set by KokoroModel.fuse_albert) runs its products through
    ops.linear: query, key and value as one stacked product, the GELU and the residuals in the products'
    epilogues, and on a GPU float32 products on the tensor cores in the mode's float32-class form ('tf32x3')
    where nn.Linear runs cuBLAS's FMA sgemm. Exact float32 ('ieee') and the CPU take PyTorch's products either
    way (ops.linear's rule), so there the stacking alone differs from the unfused pass. On by default: on the GPU
    it keeps every duration and makes the bfloat16, tf32 and tf32x3 forwards faster (benchmarks/RESULTS.md)."""

    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        self.embeddings = AlbertEmbeddings(cfg)
        self.encoder = AlbertEncoder(cfg)
        self.fused_on = True

    def fused(self, x: torch.Tensor) -> bool:
        """Whether this call runs fused: asked for, on a GPU, and in a mode whose products the kernel takes."""
        return self.fused_on and x.is_cuda and precision.current() != "ieee"

    def forward(self, ids, valid=None):  # [B, T] -> [B, T, 768]; valid [B, T]: the attention mask (None: all)
        x = self.embeddings(ids)
        return self.encoder(x, valid, self.fused(x))

    def project(self, linear: nn.Linear, bert: torch.Tensor) -> torch.Tensor:
        """The model's bert_encoder on ALBERT's output, through the fused product when ALBERT ran fused."""
        if self.fused(bert):
            return fused_linear(bert, linear.weight, linear.bias)
        return linear(bert)


# ---------------------------------------------------------------------------------------------------
# style-conditioned normalisation and residual blocks
# ---------------------------------------------------------------------------------------------------
class InstanceNormAffine(nn.Module):
    """The official InstanceNorm1d(affine=True) inside AdaIN: its weight/bias are folded into AdaIN's."""

    def __init__(self, channels: int):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(channels)), nn.Parameter(torch.zeros(channels))


class AdaIN1d(nn.Module):
    def __init__(self, style_dim: int, channels: int):
        super().__init__()
        self.norm = InstanceNormAffine(channels)
        self.fc = nn.Linear(style_dim, 2 * channels)

    def forward(self, x, s, lengths=None, act="none", alpha=None, slope=0.0, time_major=None):
        """act((1 + gamma) * (w * IN(x) + b) + beta), 0 past lengths; act: the activation after it, applied in
        the kernel's pass ('leaky_relu' with slope, 'snake' with alpha [C]; ops.norm.adain1d); time_major: the
        layout of the conv input to write instead (ops.norm.adain1d)."""
        stacked = _affines.get()
        if stacked is not None and stacked[0] is s and self in stacked[1]:
            scale, shift = stacked[1][self]
        else:
            scale, shift = adain_scale_shift(*style_affine(self.fc, s), self.norm.weight, self.norm.bias)
        return norm.adain1d(x, scale, shift, lengths=lengths, act=act, alpha=alpha, slope=slope,
                            time_major=time_major)


# The blocks' default for norm_into_conv's switch (KokoroModel.time_major_inputs changes a model's): on, as the norm's
# time-major store beat the conv's copy with the same bits on a GPU (benchmarks/RESULTS.md, diag/time_major_gpu.py)
TIME_MAJOR_INPUTS = True


def norm_into_conv(on: bool, norm_mod: AdaIN1d, conv_mod: Conv1d, x, s, lengths=None, conv_lengths=None, **act):
    """conv_mod(norm_mod(x, s, lengths, **act), conv_lengths). on: where the conv would first copy its input
    time-major (ops.conv.time_major_layout), the norm writes it so instead: one pass over the activation fewer,
    the same values (KokoroModel.time_major_inputs)."""
    layout = conv_mod.time_major_layout(x) if on else None
    return conv_mod(norm_mod(x, s, lengths, time_major=layout, **act), conv_lengths)


class AdaLayerNorm(nn.Module):
    def __init__(self, style_dim: int, channels: int):
        super().__init__()
        self.fc = nn.Linear(style_dim, 2 * channels)

    def forward(self, x, s):  # x [B, T, C]
        gamma, beta = style_affine(self.fc, s)
        return norm.ada_layer_norm(x, 1 + gamma, beta)


class AdainResBlk1d(nn.Module):
    """(AdaIN -> LeakyReLU 0.2 -> [x2 depthwise transposed conv] -> conv3 -> AdaIN -> LeakyReLU -> conv3
    + [nearest x2 ->] [conv1x1] shortcut) / sqrt(2)."""

    def __init__(self, dim_in: int, dim_out: int, style_dim: int, upsample: bool = False):
        super().__init__()
        self.upsample = upsample
        self.conv1 = Conv1d(dim_in, dim_out, 3, padding=1)
        self.conv2 = Conv1d(dim_out, dim_out, 3, padding=1)
        self.norm1 = AdaIN1d(style_dim, dim_in)
        self.norm2 = AdaIN1d(style_dim, dim_out)
        self.conv1x1 = Conv1d(dim_in, dim_out, 1, bias=False) if dim_in != dim_out else None
        self.pool = ConvTranspose1d(dim_in, dim_in, 3, 2, 1, 1, groups=dim_in) if upsample else None
        self.time_major_inputs = TIME_MAJOR_INPUTS  # norm_into_conv

    def forward(self, x, s, lengths=None):
        """x [B, C, T] -> [B, C', T or 2T]; lengths scale with T (see out_lengths)."""
        leaky = dict(act="leaky_relu", slope=0.2)
        if self.pool is None:
            r = norm_into_conv(self.time_major_inputs, self.norm1, self.conv1, x, s, lengths, lengths, **leaky)
        else:
            r = self.conv1(self.pool(self.norm1(x, s, lengths, **leaky), lengths), self.out_lengths(lengths))
        lengths = self.out_lengths(lengths)
        r = norm_into_conv(self.time_major_inputs, self.norm2, self.conv2, r, s, lengths, lengths, **leaky)
        sc = act.upsample_nearest1d(x, 2) if self.upsample else x
        if self.conv1x1 is not None:
            sc = self.conv1x1(sc, lengths)
        return (r + sc) * _INV_SQRT2

    def out_lengths(self, lengths):
        return self.pool.out_lengths(lengths) if self.pool is not None else lengths


class AdaINResBlock1(nn.Module):
    """HiFi-GAN resblock with AdaIN and snake: x += conv2(snake(AdaIN(conv1_d(snake(AdaIN(x)))))) for d."""

    def __init__(self, channels: int, kernel: int, dilations, style_dim: int):
        super().__init__()
        self.convs1 = nn.ModuleList([Conv1d(channels, channels, kernel, padding=d * (kernel - 1) // 2, dilation=d)
                                     for d in dilations])
        self.convs2 = nn.ModuleList([Conv1d(channels, channels, kernel, padding=(kernel - 1) // 2)
                                     for _ in dilations])
        self.adain1 = nn.ModuleList([AdaIN1d(style_dim, channels) for _ in dilations])
        self.adain2 = nn.ModuleList([AdaIN1d(style_dim, channels) for _ in dilations])
        self.alpha1 = nn.ParameterList([nn.Parameter(torch.ones(1, channels, 1)) for _ in dilations])
        self.alpha2 = nn.ParameterList([nn.Parameter(torch.ones(1, channels, 1)) for _ in dilations])
        self.time_major_inputs = TIME_MAJOR_INPUTS  # norm_into_conv

    def forward(self, x, s, lengths=None):
        # snake(0) = 0 and AdaIN writes 0 past lengths: the conv inputs are already zero-padded
        on = self.time_major_inputs
        for c1, c2, n1, n2, a1, a2 in zip(self.convs1, self.convs2, self.adain1, self.adain2, self.alpha1, self.alpha2):
            xt = norm_into_conv(on, n1, c1, x, s, lengths, act="snake", alpha=a1.view(-1))
            # in place: the conv's fresh output
            x = norm_into_conv(on, n2, c2, xt, s, lengths, act="snake", alpha=a2.view(-1)).add_(x)
        return x


# ---------------------------------------------------------------------------------------------------
# prosody predictor and acoustic text encoder
# ---------------------------------------------------------------------------------------------------
class DurationEncoder(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        d, sd = cfg.hidden_dim, cfg.style_dim
        self.lstms = nn.ModuleList()
        for _ in range(cfg.n_layer):
            self.lstms.append(BiLSTM(d + sd, d // 2))
            self.lstms.append(AdaLayerNorm(sd, d))

    def forward(self, x, s, lengths=None):  # x [B, T, 512], s [B, 128] -> [B, T, 640]
        s_t = s[:, None, :].expand(-1, x.shape[1], -1)
        x = torch.cat([x, s_t], dim=-1)
        for lstm, ada in zip(self.lstms[0::2], self.lstms[1::2]):
            x = torch.cat([ada(lstm(x, lengths), s), s_t], dim=-1)
        return x


class ProsodyPredictor(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        d, sd = cfg.hidden_dim, cfg.style_dim
        self.text_encoder = DurationEncoder(cfg)
        self.lstm = BiLSTM(d + sd, d // 2)
        self.duration_proj = nn.Module()
        self.duration_proj.linear_layer = nn.Linear(d, cfg.max_dur)
        self.shared = BiLSTM(d + sd, d // 2)
        for branch in ("F0", "N"):
            setattr(self, branch, nn.ModuleList([
                AdainResBlk1d(d, d, sd), AdainResBlk1d(d, d // 2, sd, upsample=True),
                AdainResBlk1d(d // 2, d // 2, sd)]))
        self.F0_proj = Conv1d(d // 2, 1, 1)
        self.N_proj = Conv1d(d // 2, 1, 1)

    def durations(self, d_en, s, speeds, lengths=None):
        """d_en [B, T, 512], one speed per item -> (d [B, T, 640], logits [B, T, 50], frames per token:
        a list of B LongTensors [lengths[b]])."""
        d, logits, frames = self.frames_per_token(d_en, s, lengths)
        n = [frames.shape[1]] * len(speeds) if lengths is None else lengths.tolist()
        # divided item by item by the Python float, as a solo run divides
        return d, logits, [torch.round(frames[b, :n[b]] / speeds[b]).clamp(min=1).long() for b in range(len(n))]

    def frames_per_token(self, d_en, s, lengths=None):
        """d_en [B, T, 512] -> (d [B, T, 640], logits [B, T, 50], frames [B, T]: the unrounded frames per token at
        speed 1), on the device, without reading anything back (what a CUDA graph can record)."""
        d = self.text_encoder(d_en, s, lengths)
        logits = self.duration_proj.linear_layer(self.lstm(d, lengths))
        return d, logits, torch.sigmoid(logits).sum(dim=-1)

    def f0_energy(self, en, s, lengths=None, items_alone: bool = True):
        """en [B, 640, F] (aligned) -> F0 and energy curves [B, 2F] (item b valid up to 2·lengths[b], 0 past it).
        items_alone=False: the curves' blocks on the padded batch with its lengths (a GPU's kernels round each row
        as a solo run does; see KokoroModel.forward_batch)."""
        x = self.shared(en.transpose(1, 2), lengths).transpose(1, 2)
        if lengths is None:
            return self._curves(x, s)
        if not items_alone:
            f0, n = self._curves(x, s, lengths)
            past = torch.arange(f0.shape[-1], device=f0.device)[None, :] >= 2 * lengths[:, None]
            return f0.masked_fill(past, 0.0), n.masked_fill(past, 0.0)
        # The curves item by item on their own frames: the harmonic source integrates F0 into thousands of
        # radians of phase, so the convs' rounding must be a solo run's (CPU convs pick their algorithm by
        # shape, and a padded batch's rounds differently). These blocks are a small part of the work.
        f0, n = x.new_zeros(x.shape[0], 2 * x.shape[-1]), x.new_zeros(x.shape[0], 2 * x.shape[-1])
        for b, frames in enumerate(lengths.tolist()):
            f0_b, n_b = self._curves(x[b:b + 1, :, :frames], s[b:b + 1])
            f0[b, :f0_b.shape[-1]], n[b, :n_b.shape[-1]] = f0_b[0], n_b[0]
        return f0, n

    def _curves(self, x, s, lengths=None):
        def branch(blocks, proj):  # the F0 and energy branches: the same shapes, independent of each other
            y, out = x, lengths
            for block in blocks:  # the upsampling block doubles the lengths
                y, out = block(y, s, out), block.out_lengths(out)
            return proj(y, out).squeeze(1)

        with style_affines(s, self.F0, self.N):
            f0, n = graphs.concurrently(x.device, lambda: branch(self.F0, self.F0_proj),
                                        lambda: branch(self.N, self.N_proj))
        return f0, n


class TextEncoder(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        C, k = cfg.hidden_dim, cfg.text_encoder_kernel_size
        self.embedding = nn.Embedding(cfg.n_token, C)
        self.cnn = nn.ModuleList()
        for _ in range(cfg.n_layer):
            block = nn.Module()
            # official names: cnn.i.0 (conv), cnn.i.1 (LayerNorm with gamma/beta)
            block.add_module("0", Conv1d(C, C, k, padding=(k - 1) // 2))
            ln = nn.Module()
            ln.gamma, ln.beta = nn.Parameter(torch.ones(C)), nn.Parameter(torch.zeros(C))
            block.add_module("1", ln)
            self.cnn.append(block)
        self.lstm = BiLSTM(C, C // 2)

    def forward(self, ids, lengths=None):  # [B, T] -> [B, 512, T]
        x = self.embedding(ids).transpose(1, 2)
        for block in self.cnn:
            c, ln = block._modules["0"], block._modules["1"]
            x = norm.layer_norm(c(x, lengths).transpose(1, 2), ln.gamma, ln.beta, 1e-5)
            x = act.leaky_relu(x.contiguous(), 0.2).transpose(1, 2)
        return self.lstm(x.transpose(1, 2), lengths).transpose(1, 2)


# ---------------------------------------------------------------------------------------------------
# decoder and iSTFTNet generator
# ---------------------------------------------------------------------------------------------------
class Generator(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        self.cfg = cfg
        sd, ch0 = cfg.style_dim, cfg.upsample_initial_channel
        n_fft = cfg.gen_istft_n_fft
        self.m_source = nn.Module()
        self.m_source.l_linear = nn.Linear(cfg.harmonics + 1, 1)
        self.ups, self.noise_convs, self.noise_res, self.resblocks = (nn.ModuleList() for _ in range(4))
        rates, kernels = cfg.upsample_rates, cfg.upsample_kernel_sizes
        for i, (u, k) in enumerate(zip(rates, kernels)):
            c = ch0 // 2 ** (i + 1)
            self.ups.append(ConvTranspose1d(ch0 // 2 ** i, c, k, u, padding=(k - u) // 2))
            for rk, rd in zip(cfg.resblock_kernel_sizes, cfg.resblock_dilation_sizes):
                self.resblocks.append(AdaINResBlock1(c, rk, rd, sd))
            if i + 1 < len(rates):
                stride = math.prod(rates[i + 1:])
                self.noise_convs.append(Conv1d(n_fft + 2, c, stride * 2, stride=stride, padding=(stride + 1) // 2))
                self.noise_res.append(AdaINResBlock1(c, 7, (1, 3, 5), sd))
            else:
                self.noise_convs.append(Conv1d(n_fft + 2, c, 1))
                self.noise_res.append(AdaINResBlock1(c, 11, (1, 3, 5), sd))
        # float32 in every storage dtype: its output is exp()'d into magnitudes and sin()'d into phases for the
        # iSTFT, where a bfloat16 rounding (2^-9 relative) of a log-magnitude would be a ~1% amplitude error
        self.conv_post = Conv1d(c, n_fft + 2, 7, padding=3)

    @property
    def samples_per_frame(self) -> int:
        return math.prod(self.cfg.upsample_rates) * self.cfg.gen_istft_hop_size

    def source(self, f0_curve, generator: torch.Generator | None):
        """F0 [B, F'] (decoder frame rate) -> STFT magnitude and phase of the harmonic excitation [B, 22, .]."""
        cfg = self.cfg
        up = self.samples_per_frame
        f0 = act.upsample_nearest1d(f0_curve.contiguous(), up).unsqueeze(-1)  # [B, T, 1]
        B, T = f0.shape[0], f0.shape[1]
        draw_device = generator.device if generator is not None else f0.device
        rand_ini, noise = spectral.draw_source_noise(B, T, cfg.harmonics + 1, generator, draw_device)
        har = spectral.harmonic_source(f0, self.m_source.l_linear.weight, self.m_source.l_linear.bias,
                                       rand_ini.to(f0.device), noise.to(f0.device), sample_rate=cfg.sample_rate,
                                       upsample_scale=up, voiced_threshold=cfg.voiced_threshold)
        mag, phase = spectral.stft_mag_phase(har.squeeze(-1), cfg.gen_istft_n_fft, cfg.gen_istft_hop_size)
        return torch.cat([mag, phase], dim=1)

    def spectrum(self, x, s, har, lengths=None, har_lengths=None):
        """Decoder features [B, 512, F'] -> conv_post output [B, 22, frames] (log-magnitude | phase logits).
        lengths: item frames on F' (None: all full); har_lengths: on the source's STFT frames. Returns the
        output and its per-item frame counts (None when lengths is None). x and the (float32) source meet the
        convs in their storage dtype; conv_post runs in its own (see __init__)."""
        with style_affines(s, self.noise_res, self.resblocks):
            return self._spectrum(x, s, har, lengths, har_lengths)

    def _spectrum(self, x, s, har, lengths, har_lengths):
        n = len(self.cfg.resblock_kernel_sizes)
        dtype = self.ups[0].weight.dtype
        x, har = x.to(dtype), har.to(dtype)
        for i, up in enumerate(self.ups):
            def upsample(x=x, lengths=lengths, i=i, up=up):
                x, lengths = up(act.leaky_relu(x, 0.1), lengths), up.out_lengths(lengths)
                if i == len(self.ups) - 1:
                    # a reflection at the start: each item's own first frames, so padding needs no care here
                    x = torch.nn.functional.pad(x, (1, 0), mode="reflect")
                    lengths = None if lengths is None else lengths + 1
                return x, lengths

            def noise(i=i):
                return self.noise_res[i](self.noise_convs[i](har, har_lengths), s,
                                         self.noise_convs[i].out_lengths(har_lengths))

            # the noise branch beside the upsampling, then the stage's resblocks beside one another
            # (graphs.concurrently: on separate streams inside a CUDA graph); summed in their order, as one by one
            (x, lengths), x_source = graphs.concurrently(x.device, upsample, noise)
            # in place on fresh outputs (the upsampling's, the first resblock's): no temporaries of [B, C, T]
            x = x.add_(x_source)
            xs = graphs.concurrently(x.device, *(functools.partial(self.resblocks[i * n + j], x, s, lengths)
                                                 for j in range(n)))
            for j in range(1, n):
                xs[0].add_(xs[j])
            x = xs[0].div_(n)
        return self.conv_post(act.leaky_relu(x, 0.01).to(self.conv_post.weight.dtype), lengths), lengths


class Decoder(nn.Module):
    def __init__(self, cfg: KokoroConfig):
        super().__init__()
        d, sd = cfg.hidden_dim, cfg.style_dim
        self.encode = AdainResBlk1d(d + 2, 1024, sd)
        self.decode = nn.ModuleList([AdainResBlk1d(1024 + 2 + 64, 1024, sd) for _ in range(3)]
                                    + [AdainResBlk1d(1024 + 2 + 64, 512, sd, upsample=True)])
        self.F0_conv = Conv1d(1, 1, 3, stride=2, padding=1)
        self.N_conv = Conv1d(1, 1, 3, stride=2, padding=1)
        self.asr_res = nn.ModuleList([Conv1d(d, 64, 1)])
        self.generator = Generator(cfg)

    def features(self, asr, f0_curve, n_curve, s, lengths=None):
        """asr [B, 512, F], F0/energy [B, 2F] -> generator input [B, 512, 2F] in the convs' storage dtype;
        lengths: frames on F."""
        dtype = self.encode.conv1.weight.dtype
        asr, f0_curve, n_curve = asr.to(dtype), f0_curve.to(dtype), n_curve.to(dtype)
        curve_lengths = None if lengths is None else 2 * lengths
        f0 = self.F0_conv(f0_curve.unsqueeze(1), curve_lengths)
        n = self.N_conv(n_curve.unsqueeze(1), curve_lengths)
        with style_affines(s, self.encode, self.decode):
            x = self.encode(torch.cat([asr, f0, n], dim=1), s, lengths)
            asr_res = self.asr_res[0](asr, lengths)
            for block in self.decode:
                x = block(torch.cat([x, asr_res, f0, n], dim=1), s, lengths)
        return x
