"""Spectral kernels against the stock PyTorch transforms and the reference harmonic source: properties the
registry's oracle cases do not express (round trips, polar outputs with phase wrap-around, exact parity of
the PyTorch path with the official Kokoro module, BigVGAN's mel convention, the Slaney filterbank)."""
import importlib
import importlib.util
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tests.conftest import KERNEL_DEVICE
from tilewave import ops
from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import source as KS
from tilewave.kernels import spectral as K
from tilewave.ops import spectral as S

DEV = KERNEL_DEVICE
SIZES = [(20, 5), (1024, 256)]  # Kokoro's generator transform; usual speech analysis
F32 = tolerance("float32", "reduction")


def _signal(B, N, seed):
    return torch.randn(B, N, generator=torch.Generator().manual_seed(seed)).to(DEV)


def _hann(n):
    return torch.hann_window(n, periodic=True, dtype=torch.float64)


def _wrapped(a, b):
    """Largest angle difference, wrapped into [-pi, pi] (±pi are one angle)."""
    d = (a.double().cpu() - b.double().cpu() + math.pi) % (2 * math.pi) - math.pi
    return d.abs().max().item()


@pytest.mark.parametrize("n_fft,hop", SIZES)
def test_stft_polar_matches_torch_stft(n_fft, hop):
    x = _signal(2, 3 * n_fft + 7, 0)
    mag, phase = K.stft(x, n_fft, hop)
    ref = torch.stft(x.cpu().double(), n_fft, hop, window=_hann(n_fft), center=True, pad_mode="reflect",
                     return_complex=True)
    assert scaled_max_error(mag, ref.abs()) <= F32
    significant = ref.abs() > 1e-3 * ref.abs().max()  # the phase of a vanishing bin is arbitrary
    assert _wrapped(phase.cpu()[significant], ref.angle()[significant]) <= 1e-3
    assert scaled_max_error(torch.polar(mag.cpu().double(), phase.cpu().double()).real, ref.real) <= F32


def test_atan2_quadrants_zeros_and_axes():
    @triton.jit
    def _atan2_kernel(y_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        m = i < n
        tl.store(out_ptr + i, K.atan2(tl.load(y_ptr + i, mask=m), tl.load(x_ptr + i, mask=m)), mask=m)

    vals = np.array([0.0, -0.0, 1e-30, -1e-30, 0.3, -0.3, 1.0, -1.0, 2.5, -2.5, 1e6, -1e6, 0.41421356, -2.4142135])
    y, x = (torch.tensor(v, dtype=torch.float32) for v in np.meshgrid(vals, vals))
    y, x = y.flatten().contiguous(), x.flatten().contiguous()
    out = torch.full_like(y, float("nan"), device=DEV)
    _atan2_kernel[(1,)](y.to(DEV), x.to(DEV), out, y.numel(), BLOCK=256)
    ref = np.arctan2(y.double().numpy(), x.double().numpy())
    # the kernel's conventions: the signs of zeros are ignored, so atan2(±0, x<0) = +pi and atan2(±0, ±0) = 0
    ref = np.where(np.isclose(ref, -np.pi) & (y.numpy() == 0), np.pi, ref)
    ref = np.where((y.numpy() == 0) & (x.numpy() == 0), 0.0, ref)
    assert np.abs(out.cpu().double().numpy() - ref).max() <= 5e-7


@pytest.mark.parametrize("n_fft,hop", SIZES)
def test_stft_istft_round_trip(n_fft, hop):
    x = _signal(2, 4 * n_fft + hop * 3, 1)
    y = K.istft(*K.stft(x, n_fft, hop), n_fft, hop)
    n = min(x.shape[-1], y.shape[-1])
    assert y.shape[-1] == hop * (x.shape[-1] // hop)
    assert scaled_max_error(y[:, :n], x[:, :n]) <= F32


@pytest.mark.parametrize("n_fft,hop,frames", [(20, 5, 41), (1024, 256, 6), (16, 4, 9)])
def test_istft_matches_torch_istft(n_fft, hop, frames):
    g = torch.Generator().manual_seed(2)
    shape = (2, n_fft // 2 + 1, frames)
    mag, phase = torch.rand(shape, generator=g) * 2, (torch.rand(shape, generator=g) * 2 - 1) * math.pi
    ref = torch.istft(torch.polar(mag.double(), phase.double()), n_fft, hop, window=_hann(n_fft), center=True)
    out = K.istft(mag.to(DEV), phase.to(DEV), n_fft, hop)
    assert scaled_max_error(out, ref) <= F32


def test_istft_exp_sin_matches_torch_istft():
    # Kokoro's generator tail: 22 channels = log-magnitude and pre-sine phase of 11 bins, n_fft 20, hop 5.
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.randn(1, 11, 57, generator=g) - 1, torch.randn(1, 11, 57, generator=g) * 3], 1)
    ref = torch.istft(torch.polar(torch.exp(x[:, :11]).double(), torch.sin(x[:, 11:]).double()), 20, 5,
                      window=_hann(20), center=True)
    out = K.istft_exp_sin(x.to(DEV), 20, 5)
    assert out.shape == ref.shape == (1, 5 * 56)
    assert scaled_max_error(out, ref) <= F32


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("n_fft,hop,frames", [(20, 5, 41), (16, 3, 30)])
def test_small_istft_output_modes_across_tile_edges(monkeypatch, mode, n_fft, hop, frames):
    # 16-frame tiles: the halo frames and the row shifts cross several program boundaries; hop 3 leaves
    # padding columns in the joined tile and taps past n_fft in the last shift.
    monkeypatch.setattr(K.inverse, "ISTFT_SMALL_KERNEL", "vectors")
    monkeypatch.setattr(K.inverse, "ISTFT_OLA_FRAMES", 16)
    monkeypatch.setattr(K.inverse, "ISTFT_OLA_MODE", mode)
    g = torch.Generator().manual_seed(9)
    shape = (2, n_fft // 2 + 1, frames)
    mag, phase = torch.rand(shape, generator=g) * 2, (torch.rand(shape, generator=g) * 2 - 1) * math.pi
    ref = torch.istft(torch.polar(mag.double(), phase.double()), n_fft, hop, window=_hann(n_fft), center=True)
    assert scaled_max_error(K.istft(mag.to(DEV), phase.to(DEV), n_fft, hop), ref) <= F32


@pytest.mark.parametrize("n_fft,hop,frames,win,exp_sin", [(20, 5, 41, None, False), (20, 5, 30, None, True),
                                                         (16, 3, 34, None, False), (16, 4, 29, 13, False)])
def test_small_istft_rows_across_tile_edges(monkeypatch, n_fft, hop, frames, win, exp_sin):
    # 4-row tiles: every program starts with a halo row, carries cross rows and programs, the first and last
    # programs take the masked launch and the others the interior one; hop 3 pads the stored tile (5 frames x 3 = 15 of 16 columns), an odd window
    # length leaves the window asymmetric (taps n and n_fft − n multiplied separately).
    monkeypatch.setattr(K.inverse, "ISTFT_SMALL_KERNEL", "rows")
    monkeypatch.setattr(K.inverse, "ISTFT_ROWS_TILE", 4)
    g = torch.Generator().manual_seed(11)
    NF = n_fft // 2 + 1
    if exp_sin:
        x = torch.cat([torch.randn(2, NF, frames, generator=g) - 1, torch.randn(2, NF, frames, generator=g) * 3], 1)
        mag, phase = torch.exp(x[:, :NF]), torch.sin(x[:, NF:])
        out = K.istft_exp_sin(x.to(DEV), n_fft, hop)
    else:
        mag = torch.rand(2, NF, frames, generator=g) * 2
        phase = (torch.rand(2, NF, frames, generator=g) * 2 - 1) * math.pi
        out = K.istft(mag.to(DEV), phase.to(DEV), n_fft, hop, win)
    window = torch.tensor(K.padded_hann(n_fft, win or n_fft))
    ref = torch.istft(torch.polar(mag.double(), phase.double()), n_fft, hop, win_length=n_fft, window=window,
                      center=True)
    assert K.istft_rows_config(n_fft, hop) is not None
    n, first, last = K.inverse.istft_rows_programs(frames, out.shape[-1], n_fft, hop, K.istft_rows_config(n_fft, hop)[0], 4)
    assert 0 < first < last < n  # both launches ran: the interior programs and the masked edges
    assert scaled_max_error(out, ref) <= F32


def test_small_istft_rows_interior_programs_are_exactly_those_inside_the_signal():
    # the host's range against the kernel's condition, program by program
    for n_fft, hop, f, rows in ((20, 5, 4, 32), (20, 5, 4, 4), (16, 3, 5, 4), (16, 4, 4, 8)):
        half, step = n_fft // 2, (rows - 1) * f
        for T in range(1, 300, 7):
            L_out = hop * (T - 1)
            n, first, last = K.inverse.istft_rows_programs(T, L_out, n_fft, hop, f, rows)
            assert n == -(-((L_out - 1 + half) // hop - half // hop + 1) // step)
            for p in range(n):
                tb, j0 = half // hop - f + p * step, p * step * hop + hop * (half // hop - f) - half
                inside = tb >= 0 and tb + rows * f <= T and j0 + f * hop >= 0 and j0 + rows * f * hop <= L_out
                assert inside == (first <= p < last), (n_fft, hop, rows, T, p)


def test_small_istft_kernel_choice():
    # the rows form holds F >= overlap − 1 frames of n_fft taps per thread; long overlaps take the frame vectors
    assert K.istft_rows_config(20, 5)[0] == 4
    assert K.istft_rows_config(16, 3)[0] == 5
    assert K.istft_rows_config(34, 4) is None


def test_fft_istft_with_a_hop_that_does_not_divide_n_fft():
    g = torch.Generator().manual_seed(13)
    shape = (2, 513, 37)
    mag, phase = torch.rand(shape, generator=g) * 2, (torch.rand(shape, generator=g) * 2 - 1) * math.pi
    ref = torch.istft(torch.polar(mag.double(), phase.double()), 1024, 200, window=_hann(1024), center=True)
    assert scaled_max_error(K.istft(mag.to(DEV), phase.to(DEV), 1024, 200), ref) <= F32


FFT_PRECISIONS = ["ieee"] + (["tf32x3"] if DEV == "cuda" else [])


@pytest.mark.parametrize("precision", FFT_PRECISIONS)
@pytest.mark.parametrize("n_fft,win", [(256, 256), (2048, 1600)])
def test_fft_kernels_at_other_splits_against_float64(n_fft, win, precision):
    # 256 takes the DFT-GEMM kernels (an FFT split of 16·16 is below tl.dot's minimum reduction on the GPU);
    # 2048 = 64·32 (N1 != N2) the FFT, with a window shorter than n_fft
    hop = n_fft // 4
    assert K.fft_split(n_fft) == (None if n_fft == 256 else (64, 32))
    x = _signal(2, 3 * n_fft + 77, 11)
    window = torch.nn.functional.pad(_hann(win), ((n_fft - win) // 2, n_fft - win - (n_fft - win) // 2))
    spec = torch.stft(x.cpu().double(), n_fft, hop, window=window, center=True, return_complex=True)
    re, im = K.stft(x, n_fft, hop, win, polar=False, precision=precision)
    assert max(scaled_max_error(re, spec.real), scaled_max_error(im, spec.imag)) <= F32
    mag, phase = (v.float().contiguous().to(DEV) for v in (spec.abs(), spec.angle()))
    y = K.istft(mag, phase, n_fft, hop, win, precision=precision)
    assert scaled_max_error(y, torch.istft(spec, n_fft, hop, window=window, center=True)) <= F32
    fb = torch.rand(40, n_fft // 2 + 1, generator=torch.Generator().manual_seed(12)) * 0.05
    ref = torch.log(torch.clamp(fb.double() @ spec.abs(), min=1e-5))
    out = K.mel_spectrogram(x, fb.to(DEV), n_fft, hop, win, magnitude=True, mag_eps=0.0, precision=precision)
    assert scaled_max_error(out, ref) <= F32


def _bigvgan_reference(x, mel_basis, n_fft, hop, win):
    """The BigVGAN mel, written as its training code computes it."""
    x = F.pad(x[:, None], ((n_fft - hop) // 2,) * 2, mode="reflect")[:, 0]
    spec = torch.stft(x, n_fft, hop, win, window=torch.hann_window(win, device=x.device), center=False,
                      return_complex=True)
    mag = torch.sqrt(spec.real ** 2 + spec.imag ** 2 + 1e-9)
    return torch.log(torch.clamp(mel_basis @ mag, min=1e-5))


def _slaney(n_fft=1024, n_mels=100):
    return torch.tensor(K.slaney_mel_filterbank(24000, n_fft, n_mels), dtype=torch.float32)


def test_mel_bigvgan_convention_is_expressible_and_exact():
    x = _signal(1, 4000, 4) * 0.1
    fb = _slaney().to(DEV)
    ref = _bigvgan_reference(x.cpu(), fb.cpu(), 1024, 256, 1024)
    kernel = K.mel_spectrogram(x, fb, 1024, 256, 1024, pad=(1024 - 256) // 2, magnitude=True, mag_eps=1e-9, eps=1e-5)
    assert scaled_max_error(kernel, ref) <= F32
    with ops.backend("torch"):
        torch_path = S.mel_spectrogram(x.cpu(), fb.cpu(), 1024, 256, 1024, magnitude=True, center=False,
                                       reflect_pad=384)
    assert torch.equal(torch_path, ref)
    auto = S.mel_spectrogram(x, fb, 1024, 256, 1024, magnitude=True, center=False, reflect_pad=384)
    assert scaled_max_error(auto, ref) <= F32


def test_mel_power_centered_against_float64():
    x = _signal(2, 2500, 5) * 0.1
    fb = torch.rand(80, 513, generator=torch.Generator().manual_seed(6)) * 0.05
    spec = torch.stft(x.cpu().double(), 1024, 256, window=_hann(1024), center=True, return_complex=True)
    ref = torch.log(torch.clamp(fb.double() @ spec.abs() ** 2, min=1e-5))
    out = S.mel_spectrogram(x, fb.to(DEV), 1024, 256, magnitude=False, center=True)
    assert scaled_max_error(out, ref) <= F32
    assert scaled_max_error(K.mel_spectrogram(x, fb.to(DEV), 1024, 256), ref) <= F32


def test_filterbank_gemm_with_partial_tiles():
    # 70 frames: a partial frame tile; 100 bands: a partial band tile
    x = _signal(1, 69 * 256, 15) * 0.1
    fb = _slaney().to(DEV)
    spec = torch.stft(x.cpu().double(), 1024, 256, window=_hann(1024), center=True, return_complex=True)
    ref = torch.log(torch.clamp(fb.cpu().double() @ spec.abs() ** 2, min=1e-5))
    assert scaled_max_error(K.mel_spectrogram(x, fb, 1024, 256), ref) <= F32


def test_slaney_filterbank_matches_an_independent_implementation():
    from transformers.audio_utils import mel_filter_bank

    for n_fft, n_mels, sr in ((1024, 100, 24000), (2048, 128, 44100), (1024, 80, 22050)):
        ours = K.slaney_mel_filterbank(sr, n_fft, n_mels)
        theirs = mel_filter_bank(n_fft // 2 + 1, n_mels, 0.0, sr / 2, sr, norm="slaney", mel_scale="slaney").T
        assert ours.shape == (n_mels, n_fft // 2 + 1)
        assert np.abs(ours - theirs).max() <= 1e-9 * np.abs(theirs).max()


# ------------------------------------------------------------------------------------------------------
# harmonic source
# ------------------------------------------------------------------------------------------------------
def _f0_curve(frames, upsample, seed):
    g = torch.Generator().manual_seed(seed)
    per_frame = torch.rand(1, frames, generator=g) * 300 + 90
    per_frame[:, frames // 3: frames // 2] = 0.0  # an unvoiced stretch
    return per_frame.repeat_interleave(upsample, 1)[..., None]


def _source_params(K_=9, seed=7):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, K_, generator=g) * 0.3, torch.randn(1, generator=g) * 0.1


def test_harmonic_source_kernel_matches_torch_path_on_short_signals():
    # The PyTorch path keeps the reference's float32 phase; over a few frames it is still accurate to ~1e-4.
    f0 = _f0_curve(6, 300, 8)
    w, b = _source_params()
    rand_ini, noise = S.draw_source_noise(1, f0.shape[1], 9, torch.Generator().manual_seed(9), "cpu")
    kw = dict(sample_rate=24000, upsample_scale=300)
    ref = KS.harmonic_source_torch(f0, w, b, rand_ini, noise, **kw)
    out = KS.harmonic_source(*(t.to(DEV) for t in (f0, w, b, rand_ini)), noise.to(DEV), **kw)
    assert out.shape == ref.shape == (1, 1800, 1)
    assert scaled_max_error(out, ref) <= F32


def test_harmonic_source_float64_phase_beats_float32_over_long_signals():
    # Over 60 frames the float32 phase of the reference drifts; the kernel's float64 phase tracks the oracle.
    f0 = _f0_curve(60, 300, 10)
    w, b = _source_params()
    rand_ini, noise = S.draw_source_noise(1, f0.shape[1], 9, torch.Generator().manual_seed(11), "cpu")
    kw = dict(sample_rate=24000, upsample_scale=300)
    oracle = KS.harmonic_source_oracle(f0.double(), w.double(), b.double(), rand_ini.double(), noise.double(), **kw)
    out = KS.harmonic_source(*(t.to(DEV) for t in (f0, w, b, rand_ini)), noise.to(DEV), **kw)
    assert scaled_max_error(out, oracle) <= tolerance("float32", "pointwise")
    assert scaled_max_error(out, oracle) < scaled_max_error(KS.harmonic_source_torch(f0, w, b, rand_ini, noise, **kw),
                                                            oracle)


def test_harmonic_source_rejects_a_length_off_the_frame_grid():
    f0 = torch.full((1, 301, 1), 100.0, device=DEV)
    with pytest.raises(ValueError, match="multiple of upsample_scale"):
        KS.harmonic_source(f0, torch.ones(1, 9, device=DEV), torch.zeros(1, device=DEV),
                          torch.zeros(1, 9, device=DEV), torch.zeros(1, 301, 9, device=DEV),
                          sample_rate=24000, upsample_scale=300)


def _load_official_istftnet():
    """kokoro.istftnet without kokoro/__init__.py (which imports misaki, not installed): a bare package
    module pointing at the installed folder lets the submodules import each other normally."""
    spec = importlib.util.find_spec("kokoro")
    assert spec is not None and spec.submodule_search_locations, "the kokoro package (0.9.4) is not installed"
    saved = {name: mod for name, mod in sys.modules.items() if name == "kokoro" or name.startswith("kokoro.")}
    package = types.ModuleType("kokoro")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["kokoro"] = package
    try:
        return importlib.import_module("kokoro.istftnet")
    finally:
        for name in [n for n in sys.modules if n == "kokoro" or n.startswith("kokoro.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def test_torch_path_equals_official_source_module_bit_for_bit():
    # CPU tensors wherever it runs: this pins the PyTorch path (the reference), not the kernel.
    istftnet = _load_official_istftnet()
    assert Path(istftnet.__file__).name == "istftnet.py"
    module = istftnet.SourceModuleHnNSF(sampling_rate=24000, upsample_scale=300, harmonic_num=8, voiced_threshod=10)
    f0 = _f0_curve(8, 300, 12)
    torch.manual_seed(1234)
    ref, _, _ = module(f0)
    torch.manual_seed(1234)
    rand_ini, noise = S.draw_source_noise(1, f0.shape[1], 9, None, "cpu")
    with torch.no_grad(), ops.backend("torch"):
        ours = S.harmonic_source(f0, module.l_linear.weight, module.l_linear.bias, rand_ini, noise,
                                 sample_rate=24000, upsample_scale=300)
    assert torch.equal(ours, ref)


def test_ops_agree_with_the_pytorch_path_and_record_placement():
    # On a GPU the ops take the kernels (checked through the placement record); on the CPU the PyTorch path.
    x = _signal(1, 3000, 13)
    f0 = _f0_curve(4, 300, 14)
    w, b = _source_params()
    rand_ini, noise = S.draw_source_noise(1, f0.shape[1], 9, torch.Generator().manual_seed(15), "cpu")
    kw = dict(sample_rate=24000, upsample_scale=300)
    gen_tail = torch.randn(1, 22, 40, generator=torch.Generator().manual_seed(16))
    ops.reset_placements()
    got = {"stft": S.stft_mag_phase(x, 20, 5)[0], "istft": S.istft_mag_phase(*S.stft_mag_phase(x, 20, 5), 20, 5),
           "istft_exp_sin": S.istft_exp_sin(gen_tail.to(DEV), 20, 5),
           "harmonic_source": S.harmonic_source(*(t.to(DEV) for t in (f0, w, b, rand_ini, noise)), **kw)}
    where = {op: place for op, place, _, _ in ops.placements()}
    with ops.backend("torch"):
        want = {"stft": S.stft_mag_phase(x.cpu(), 20, 5)[0], "istft": x.cpu()[:, :3000],
                "istft_exp_sin": S.istft_exp_sin(gen_tail, 20, 5),
                "harmonic_source": S.harmonic_source(f0, w, b, rand_ini, noise, **kw)}
    for op in got:
        assert where[op] == ("triton" if DEV == "cuda" else "torch"), (op, where)
        assert scaled_max_error(got[op], want[op]) <= F32, op


@pytest.mark.parametrize("U", [300, 7, 30])
def test_oracle_resampling_is_torch_linear_interpolation(U):
    # The harmonic oracle's down- and up-sampling must be F.interpolate(mode="linear", align_corners=False) with the
    # reference's scale factors, edges included (left clamp at source 0, right neighbour clamped to the last sample).
    x = torch.randn(2, 3, 5 * U, generator=torch.Generator().manual_seed(U), dtype=torch.float64)
    down = F.interpolate(x, scale_factor=1 / U, mode="linear")
    up = F.interpolate(down, scale_factor=U, mode="linear")
    ours_down = KS._linear_resample(x.numpy(), U, x.shape[-1] // U)
    assert np.abs(ours_down - down.numpy()).max() <= 1e-12
    assert np.abs(KS._linear_resample(down.numpy(), 1 / U, x.shape[-1]) - up.numpy()).max() <= 1e-12
