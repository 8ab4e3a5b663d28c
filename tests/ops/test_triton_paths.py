"""Every op of tilewave.ops through its Triton branch, against its PyTorch path.

An op takes its Triton branch only for CUDA tensors, so without a GPU that branch (the kernel family it names,
the launcher and the limit constants it looks up, the arguments it passes) runs nowhere else. Here the name
`use_triton` in each ops module is replaced by the same rule with CPU tensors counted as eligible (the op's
own `supported` check still decides), the kernels run on the Triton interpreter (tests/conftest.py), and
each result is held to the PyTorch path (backend "torch") at the registry's tolerance for that kernel.
Shapes are the interpreter's: tiny, with every tl.dot dimension >= 16.
"""
from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import torch

import tilewave.ops
from tests.conftest import KERNEL_DEVICE
from tilewave import precision
from tilewave.harness.catalogue import load_all_kernels
from tilewave.ops import activation, attention, conv, dispatch, linear, norm, resample, rnn, spectral, vision
from tilewave.reference.attention import segments_from_lengths
from tilewave.spec.tolerance import dtype_name, scaled_max_error, tolerance

# graphs.py records CUDA graphs and dispatches nothing; dispatch.py is the rule itself
OPS_MODULES = [importlib.import_module(f"tilewave.ops.{m.name}") for m in pkgutil.iter_modules(tilewave.ops.__path__)
               if m.name not in ("dispatch", "graphs")]
REGISTRY = load_all_kernels()


@dataclass(frozen=True)
class OpCase:
    op: Callable
    inputs: Callable[[torch.Generator], tuple[tuple, dict]]  # CPU tensors; moved to KERNEL_DEVICE
    kernel: str                    # the registry entry whose tol_kind bounds the result
    placement: str                 # the name the op records with use_triton
    compared: Callable[[Any], tuple[torch.Tensor, ...]] = lambda out: out if isinstance(out, tuple) else (out,)
    patch: tuple[tuple[str, str, Any], ...] = ()  # (family, attribute, value) set on a kernel module
    mode: str = precision.OUTSIDE_SCOPE  # the precision mode in force for both runs


def _randn(g, *shape, scale=1.0):
    return torch.randn(*shape, generator=g) * scale


def _rand(g, *shape, lo=0.0, hi=1.0):
    return lo + (hi - lo) * torch.rand(*shape, generator=g)


# activation ------------------------------------------------------------------------------------------------------
def _x1d(g):
    return _randn(g, 2, 16, 37, scale=2.0)


def _snake_inputs(g):
    return (_x1d(g), _rand(g, 16, lo=0.5, hi=2.0)), {}


def _snakebeta_inputs(g):
    return (_x1d(g), _randn(g, 16, scale=0.3), _randn(g, 16, scale=0.3)), {"log_scale": True}


# attention -------------------------------------------------------------------------------------------------------
def _sdpa_inputs(g):
    q, k, v = (_randn(g, 2, 2, 37, 16) for _ in range(3))
    mask = torch.arange(37)[None, :] < torch.tensor([37, 20])[:, None]
    return (q, k, v, mask), {}


def _windowed_inputs(g):
    windows = (16, 9, 20, 5)
    q, k, v = (_randn(g, 1, 2, sum(windows), 16) for _ in range(3))
    return (q, k, v, *segments_from_lengths(windows)), {}


def _rel_pos_inputs(g):
    T, H, H_kv, D = 37, 2, 1, 16
    q = _randn(g, 1, H, T, D)
    k, v = (_randn(g, 1, H_kv, T, D) for _ in range(2))
    return (q, k, v, _randn(g, 2 * T - 1, H, D), _randn(g, H, D, scale=0.1), _randn(g, H, D, scale=0.1)), {}


def _decode_inputs(g):
    q = _randn(g, 2, 4, 16)
    k, v = (_randn(g, 2, 2, 40, 16) for _ in range(2))
    return (q, k, v, _randn(g, 4)), {"cache_lens": torch.tensor([40, 23]), "window": 20}


# conv ------------------------------------------------------------------------------------------------------------
def _conv1d_inputs(g):
    return (_randn(g, 2, 24, 61), _randn(g, 20, 24, 3, scale=0.2), _randn(g, 20)), {"padding": 1}


def _conv1d_same_inputs(g):
    return (_randn(g, 1, 16, 40), _randn(g, 16, 16, 5, scale=0.2), None), {"padding": "same", "dilation": 2}


def _conv1d_transpose_inputs(g):
    return (_randn(g, 1, 32, 29), _randn(g, 32, 16, 4, scale=0.2), _randn(g, 16)), {"stride": 2, "padding": 1}


def _conv1d_fused_inputs(g):
    x, w, b = _randn(g, 2, 16, 40), _randn(g, 16, 16, 3, scale=0.2), _randn(g, 16)
    return (x, w, b), {"padding": 3, "dilation": 3, "act": "snake", "alpha": _rand(g, 16, lo=0.5, hi=2.0),
                       "residual": _randn(g, 2, 16, 40), "scale": 0.5}


def _conv1d_fused_transposed_inputs(g):
    x, w, b = _randn(g, 1, 16, 20), _randn(g, 16, 16, 4, scale=0.2), _randn(g, 16)
    return (x, w, b), {"stride": 2, "padding": 1, "act": "leaky_relu", "slope": 0.1, "residual": _randn(g, 1, 16, 40),
                       "scale": 0.7, "transposed": True}


# norm ------------------------------------------------------------------------------------------------------------
def _adain_inputs(g, lengths=None, act="none"):
    x = _randn(g, 2, 16, 50, scale=3.0) + 1.0
    kw = {} if lengths is None else {"lengths": torch.tensor(lengths)}
    if act != "none":  # the activation that follows AdaIN in Kokoro, fused into the kernel's pass
        kw.update(act=act, alpha=_rand(g, 16, lo=0.5, hi=1.5), slope=0.2)
    return (x, _rand(g, 2, 16, lo=0.5, hi=1.5), _randn(g, 2, 16)), kw


def _layer_norm_inputs(g):
    return (_randn(g, 2, 9, 48, scale=2.0), _rand(g, 48, lo=0.5, hi=1.5), _randn(g, 48)), {}


def _ada_layer_norm_inputs(g):
    return (_randn(g, 2, 9, 48, scale=2.0), _rand(g, 2, 48, lo=0.5, hi=1.5), _randn(g, 2, 48)), {}


# resample --------------------------------------------------------------------------------------------------------
def _act1d_inputs(g):
    return (_randn(g, 2, 8, 100), _randn(g, 8, scale=0.3), _randn(g, 8, scale=0.3)), {"log_scale": True}


# rnn -------------------------------------------------------------------------------------------------------------
def _lstm_params(g, I, H):
    return tuple(_rand(g, *s, lo=-0.25, hi=0.25) for s in ((4 * H, I), (4 * H, H), (4 * H,), (4 * H,)))


def _lstm_inputs(g):
    return (_randn(g, 2, 6, 12), [_lstm_params(g, 12, 16), _lstm_params(g, 12, 16)]), {"lengths": torch.tensor([6, 4])}


def _lstm_cell_inputs(g):
    return (_randn(g, 3, 12), _randn(g, 3, 16, scale=0.5), _randn(g, 3, 16, scale=0.5), _lstm_params(g, 12, 16)), {}


# spectral --------------------------------------------------------------------------------------------------------
def _stft_inputs(g):
    return (_randn(g, 2, 97), 20, 5), {}


def _spectrum(out):
    # a bin whose Im is ±0 may have phase π on one path and -π on the other: compare the spectrum it encodes
    mag, phase = out
    return mag * torch.cos(phase), mag * torch.sin(phase)


def _istft_inputs(g):
    return (_rand(g, 2, 11, 23, hi=2.0), _rand(g, 2, 11, 23, lo=-math.pi, hi=math.pi), 20, 5), {}


def _istft_exp_sin_inputs(g):
    return (_randn(g, 2, 22, 37, scale=0.5), 20, 5), {}


def _mel_inputs(g, magnitude):
    n_fft, hop = 64, 16
    kw = {"magnitude": magnitude, "center": not magnitude, "reflect_pad": 0 if not magnitude else (n_fft - hop) // 2}
    return (_randn(g, 2, 700), _rand(g, 20, n_fft // 2 + 1), n_fft, hop), kw


def _source_inputs(g):
    B, frames, U, K = 2, 5, 30, 9
    f0 = _rand(g, B, frames, lo=90.0, hi=390.0)
    f0[:, 2] = 0.0  # an unvoiced frame
    rand_ini, noise = spectral.draw_source_noise(B, frames * U, K, g, "cpu")
    return ((f0.repeat_interleave(U, 1)[..., None], _randn(g, 1, K, scale=0.3), _randn(g, 1, scale=0.1), rand_ini,
             noise), {"sample_rate": 24000, "upsample_scale": U})


# vision ----------------------------------------------------------------------------------------------------------
def _nhwc(g):
    return _randn(g, 1, 9, 11, 24)


def _depthwise_inputs(g):
    return (_nhwc(g), _randn(g, 24, 3, 3, scale=0.3), _randn(g, 24)), {"stride": 1, "padding": 1}


def _im2col_inputs(g):
    return (_randn(g, 1, 3, 28, 28), 14), {}


def _transpose_th_inputs(g):
    return (_randn(g, 5, 7, 9),), {}


def _resize_inputs(g):
    return (_rand(g, 2, 20, 12, 3), (7, 5), (0.48, 0.46, 0.41), (0.27, 0.26, 0.28)), {"mode": "bicubic"}


def _avg_pool_inputs(g):
    return (_nhwc(g), 3), {"stride": 1, "padding": 1}


def _pos_emb_inputs(g):
    return (_randn(g, 2, 12, 32), _randn(g, 4, 32), _randn(g, 3, 32)), {}


def _frame_diff_inputs(g):
    return (_rand(g, 2, 16, 12, 3), _rand(g, 2, 16, 12, 3), (4, 3)), {}


def _linear_inputs(g, act="none", residual=False):
    x = _randn(g, 2, 21, 48)
    kwargs = {"act": act, "residual": _randn(g, 2, 21, 64) if residual else None}
    return (x, _randn(g, 64, 48, scale=48 ** -0.5), _randn(g, 64, scale=0.5)), kwargs


def _case(op, inputs, kernel=None, placement=None, **kw):
    return OpCase(op, inputs, kernel or op.__name__, placement or op.__name__, **kw)


CASES = {
    "activation.snake": _case(activation.snake, _snake_inputs, "snake1d"),
    "activation.snake[beta,log_scale]": _case(activation.snake, _snakebeta_inputs, "snakebeta"),
    "activation.leaky_relu": _case(activation.leaky_relu, lambda g: ((_x1d(g), 0.2), {})),
    "activation.gelu_erf": _case(activation.gelu_erf, lambda g: ((_x1d(g),), {})),
    "activation.gelu_tanh": _case(activation.gelu_tanh, lambda g: ((_x1d(g),), {})),
    "activation.clamp_scalar": _case(activation.clamp_scalar, lambda g: ((_x1d(g), -0.5, 0.7), {})),
    "activation.upsample_nearest1d": _case(activation.upsample_nearest1d, lambda g: ((_x1d(g), 3), {})),
    "attention.sdpa_bidirectional": _case(attention.sdpa_bidirectional, _sdpa_inputs),
    "attention.sdpa_bidirectional_windowed": _case(attention.sdpa_bidirectional_windowed, _windowed_inputs),
    "attention.sdpa_rel_pos_conformer": _case(attention.sdpa_rel_pos_conformer, _rel_pos_inputs),
    "attention.sdpa_decode_sink": _case(attention.sdpa_decode_sink, _decode_inputs),
    "conv.conv1d": _case(conv.conv1d, _conv1d_inputs),
    "conv.conv1d[padding=same]": _case(conv.conv1d, _conv1d_same_inputs),
    "conv.conv1d_transpose": _case(conv.conv1d_transpose, _conv1d_transpose_inputs),
    "conv.conv1d_fused[snake]": _case(conv.conv1d_fused, _conv1d_fused_inputs),
    "conv.conv1d_fused[transposed,leaky_relu]": _case(conv.conv1d_fused, _conv1d_fused_transposed_inputs),
    # exact float32 runs on cuBLAS (the op's own rule): the kernel's branch is the float32-class modes'
    "linear.linear": _case(linear.linear, _linear_inputs, mode="tf32x3"),
    "linear.linear[gelu_tanh]": _case(linear.linear, lambda g: _linear_inputs(g, "gelu_tanh"), mode="tf32x3"),
    "linear.linear[residual]": _case(linear.linear, lambda g: _linear_inputs(g, residual=True), mode="tf32"),
    "norm.adain1d": _case(norm.adain1d, _adain_inputs),
    "norm.adain1d[lengths]": _case(norm.adain1d, lambda g: _adain_inputs(g, [50, 31])),
    "norm.adain1d[snake]": _case(norm.adain1d, lambda g: _adain_inputs(g, act="snake")),
    "norm.adain1d[lengths,leaky_relu]": _case(norm.adain1d, lambda g: _adain_inputs(g, [50, 31], "leaky_relu")),
    "norm.layer_norm": _case(norm.layer_norm, _layer_norm_inputs),
    "norm.ada_layer_norm": _case(norm.ada_layer_norm, _ada_layer_norm_inputs),
    "resample.act1d": _case(resample.act1d, _act1d_inputs),
    "rnn.lstm": _case(rnn.lstm, _lstm_inputs, "lstm_batched"),
    # a hidden width past lstm_batched's: the op's other kernel, kernels.rnn.lstm
    "rnn.lstm[wide]": _case(rnn.lstm, _lstm_inputs, "lstm", patch=(("lstm_batched", "MAX_HIDDEN", 8),)),
    "rnn.lstm_cell": _case(rnn.lstm_cell, _lstm_cell_inputs),
    "spectral.stft_mag_phase": _case(spectral.stft_mag_phase, _stft_inputs, "stft", "stft", compared=_spectrum),
    "spectral.istft_mag_phase": _case(spectral.istft_mag_phase, _istft_inputs, "istft", "istft"),
    "spectral.istft_exp_sin": _case(spectral.istft_exp_sin, _istft_exp_sin_inputs),
    "spectral.mel_spectrogram[power]": _case(spectral.mel_spectrogram, lambda g: _mel_inputs(g, False)),
    "spectral.mel_spectrogram[magnitude]": _case(spectral.mel_spectrogram, lambda g: _mel_inputs(g, True),
                                                 "mel_spectrogram_magnitude"),
    "spectral.harmonic_source": _case(spectral.harmonic_source, _source_inputs),
    "vision.depthwise_conv2d_nhwc": _case(vision.depthwise_conv2d_nhwc, _depthwise_inputs),
    "vision.im2col_patch": _case(vision.im2col_patch, _im2col_inputs),
    "vision.transpose_th": _case(vision.transpose_th, _transpose_th_inputs),
    "vision.resize_normalize": _case(vision.resize_normalize, _resize_inputs),
    "vision.avg_pool2d_nhwc": _case(vision.avg_pool2d_nhwc, _avg_pool_inputs),
    "vision.pos_emb_2d_add": _case(vision.pos_emb_2d_add, _pos_emb_inputs),
    "vision.frame_diff_luma": _case(vision.frame_diff_luma, _frame_diff_inputs),
}


def _on_device(v):
    if isinstance(v, torch.Tensor):
        return v.to(KERNEL_DEVICE)
    if isinstance(v, (list, tuple)):
        return type(v)(_on_device(t) for t in v)
    if isinstance(v, dict):
        return {k: _on_device(t) for k, t in v.items()}
    return v


@pytest.fixture
def decisions(monkeypatch) -> list[tuple[str, bool, str]]:
    """Replace use_triton in every ops module by its rule with any device eligible; returns the (op, covered,
    reason) of each decision outside backend("torch")."""
    made = []

    def use_triton_on_any_device(op, *tensors, supported=True, reason=""):
        if dispatch.current_backend() == "torch":
            return False
        if callable(supported):
            supported, reason = supported()
        covered = bool(supported)
        made.append((op, covered, "" if covered else reason or "case not covered by the kernel"))
        return covered

    for module in OPS_MODULES:
        monkeypatch.setattr(module, "use_triton", use_triton_on_any_device)
    return made


@pytest.mark.parametrize("name", list(CASES))
def test_the_triton_branch_matches_the_pytorch_path(name, decisions, monkeypatch):
    case = CASES[name]
    for family, attribute, value in case.patch:
        monkeypatch.setattr(dispatch.kernels(family), attribute, value)
    args, kwargs = _on_device(case.inputs(torch.Generator().manual_seed(0)))
    with precision.scope(case.mode):
        with dispatch.backend("torch"):
            expected = case.compared(case.op(*args, **kwargs))
        got = case.compared(case.op(*args, **kwargs))
    assert decisions == [(case.placement, True, "")], f"the op did not take its Triton branch: {decisions}"
    tol = tolerance(dtype_name(expected[0].dtype), REGISTRY[case.kernel].tol_kind)
    assert len(got) == len(expected)
    for i, (out, ref) in enumerate(zip(got, expected)):
        err = scaled_max_error(out, ref)
        assert err <= tol, f"output {i}: scaled max error {err:.2e} > {tol:.0e}"


def test_every_op_that_dispatches_has_a_case():
    # a new op in tilewave/ops/*.py that calls use_triton must get a case here
    dispatching = {f"{m.__name__.rsplit('.', 1)[1]}.{name}" for m in OPS_MODULES for name, f in vars(m).items()
                   if inspect.isfunction(f) and f.__module__ == m.__name__ and not name.startswith("_")
                   and "use_triton(" in inspect.getsource(f)}
    covered = {f"{c.op.__module__.rsplit('.', 1)[1]}.{c.op.__name__}" for c in CASES.values()}
    assert dispatching - covered == set(), "ops without a Triton-path case"
    assert covered <= dispatching
