"""Normalisation ops. The caller folds a model's (1 + gamma) into gamma."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tilewave.ops.dispatch import kernels, use_triton
from tilewave.reference.norm import ada_layer_norm_torch, adain1d_torch


def adain1d(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5,
            lengths: torch.Tensor | None = None, act: str = "none", alpha: torch.Tensor | None = None,
            slope: float = 0.0, time_major: tuple[int, int, int] | None = None):
    """x [B, C, L]; gamma, beta [B, C]: act(gamma * (x - mean_t) / sqrt(max(var_t, 0) + eps) + beta) (biased var).

    lengths [B] (optional): item b's statistics cover its frames t < lengths[b] only, and its output is 0
    past them (a batch of utterances padded to one length: each item normalised as if alone).
    act: 'none', 'leaky_relu' (with slope) or 'snake' (with alpha [C]), the activation that follows: the kernel
    applies it in the same pass, the PyTorch path as the op of its own that it was.
    Statistics and affine are float32 whatever x's dtype (a 16-bit sum over 1,000 frames would lose the
    variance); the output has x's dtype.
    time_major: (left, Lp, pitch), the layout ops.conv.time_major_layout asked for: the output as that conv input
    (a kernels.conv.TimeMajor, the same values) instead of [B, C, L].
    """
    if time_major is not None:
        return _adain1d_time_major(x, gamma, beta, eps, lengths, act, alpha, slope, *time_major)
    # With lengths, each item bit-identical to its solo run: Kokoro's harmonic source integrates F0 over thousands
    # of radians of phase, so a rounding-level change upstream (masked sums that round differently) becomes a
    # visible change in the waveform. The kernel normalises each row's own frames in the same chunks and the same
    # arithmetic whatever the padding (one launch or two, the lengths read on the device); PyTorch's
    # instance_norm runs item by item.
    if use_triton("adain1d", x, gamma, beta, lengths, alpha, supported=lambda: _frames_fit(x)):
        return kernels("norm").adain1d(x.contiguous(), gamma.contiguous(), beta.contiguous(), eps, lengths=lengths,
                                       act=act, alpha=alpha, slope=slope)
    return adain1d_torch(x, gamma, beta, eps, lengths=lengths, act=act, alpha=alpha, slope=slope)


def _adain1d_time_major(x, gamma, beta, eps, lengths, act, alpha, slope, left, Lp, pitch):
    B, C, L = x.shape
    if use_triton("adain1d", x, gamma, beta, lengths, alpha, supported=lambda: _frames_fit(x)):
        data = kernels("norm").adain1d_time_major(x.contiguous(), gamma.contiguous(), beta.contiguous(), left, Lp,
                                                  pitch, eps, lengths=lengths, act=act, alpha=alpha, slope=slope)
    else:
        data = x.new_zeros(B, Lp, pitch)
        data[:, left:left + L, :C] = adain1d_torch(x, gamma, beta, eps, lengths=lengths, act=act, alpha=alpha,
                                                   slope=slope).transpose(1, 2)
    return kernels("conv").TimeMajor(data, left, C, L)


def _frames_fit(x: torch.Tensor) -> tuple[bool, str]:
    """adain1d's kernels combine at most ADAIN_MAX_CHUNKS chunks of a row."""
    k = kernels("norm")
    most = k.ADAIN_MAX_CHUNKS * k.ADAIN_BLOCK
    return x.shape[-1] <= most, f"L={x.shape[-1]} > {most} frames"


def _row_fits(x: torch.Tensor) -> tuple[bool, str]:
    """The LayerNorm kernels keep a whole row of C channels in registers."""
    max_c = kernels("norm").MAX_C
    return x.shape[-1] <= max_c, f"C={x.shape[-1]} > {max_c} channels"


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
               eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last axis (channels-last), like F.layer_norm(x, (C,), weight, bias, eps)."""
    if use_triton("layer_norm", x, weight, bias, supported=lambda: _row_fits(x)):
        return kernels("norm").layer_norm(x.contiguous(), None if weight is None else weight.contiguous(),
                                          None if bias is None else bias.contiguous(), eps)
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def ada_layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Adaptive LayerNorm: x [B, T, C], per-sample gamma, beta [B, C]: gamma * LN(x) + beta (LN without affine)."""
    if use_triton("ada_layer_norm", x, gamma, beta, supported=lambda: _row_fits(x)):
        return kernels("norm").ada_layer_norm(x.contiguous(), gamma.contiguous(), beta.contiguous(), eps)
    return ada_layer_norm_torch(x, gamma, beta, eps)
