"""Adaptive normalisations in PyTorch: the CPU path of tilewave.ops.norm and the peers of
tilewave/kernels/norm.py (layer_norm's is F.layer_norm)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tilewave.reference.activation import snake_torch


def per_item(fn, x, gamma, beta, eps, lengths):
    """fn on each item's own frames, zeros past them (the lengths contract of adain1d)."""
    out = torch.zeros_like(x)
    for b, n in enumerate(lengths.tolist()):
        out[b, :, :n] = fn(x[b:b + 1, :, :n], gamma[b:b + 1], beta[b:b + 1], eps)[0]
    return out


def adain_activation(y, act="none", alpha=None, slope=0.0):
    """The activation adain1d applies to its output (act(0) = 0, so zeros past lengths stay zeros)."""
    if act == "leaky_relu":
        return F.leaky_relu(y, slope)
    if act == "snake":
        return snake_torch(y, alpha)
    return y


def adain1d_torch(x, gamma, beta, eps=1e-5, lengths=None, act="none", alpha=None, slope=0.0):
    if act != "none":  # as two ops, each rounding to x's dtype: the model's CPU path as it was before the fusion
        return adain_activation(adain1d_torch(x, gamma, beta, eps, lengths), act, alpha, slope)
    if lengths is not None:
        return per_item(adain1d_torch, x, gamma, beta, eps, lengths)
    # 16-bit x: statistics and affine in float32, stored in its dtype, as the kernel does (float32 or float64 x:
    # as it comes); in place on the normalised x: the roundings of gamma * IN(x) + beta without two temporaries
    # (not addcmul, whose fused multiply-add rounds once)
    work = torch.promote_types(x.dtype, torch.float32)
    y = F.instance_norm(x.to(work), eps=eps).mul_(gamma.to(work).unsqueeze(-1)).add_(beta.to(work).unsqueeze(-1))
    return y.to(x.dtype)


def ada_layer_norm_torch(x, gamma, beta, eps=1e-5):
    return gamma.unsqueeze(1) * F.layer_norm(x, (x.shape[-1],), eps=eps) + beta.unsqueeze(1)
