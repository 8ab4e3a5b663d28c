"""Registration of the spectral kernels: tests, bench shapes, AOT variants."""
from __future__ import annotations

import math

import torch

from tilewave.kernels._common import rand, randn
from tilewave.kernels.spectral.common import GEMM_WARPS
from tilewave.kernels.spectral.dft import (DIRECT_BLOCK_T, STFT_TILE, _stft_direct_kernel, _stft_gemm_kernel, stft,
                                           stft_oracle, stft_torch)
from tilewave.kernels.spectral.fft import FFT_TILES, _istft_fft_frames_kernel, _stft_fft_kernel, fft_split
from tilewave.kernels.spectral.inverse import (ISTFT_FRAMES_TILE, OLA_BLOCK_S, _istft_frames_kernel, _istft_ola_kernel,
                                               _istft_rows_kernel, _overlap_add_kernel, istft, istft_exp_sin,
                                               istft_exp_sin_oracle, istft_exp_sin_torch, istft_ola_config,
                                               istft_oracle, istft_rows_config, istft_torch, small_istft_constants)
from tilewave.kernels.spectral.mel import (MEL_BLOCK_K, MEL_BLOCK_M, MEL_PROJECT_TILES, MEL_TILES, _mel_kernel,
                                           _mel_project_kernel, mel_oracle, mel_spectrogram, mel_torch)
from tilewave.precision import MODES
from tilewave.reference.spectral import slaney_mel_filterbank
from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register


_SR = 24000


def _signal(p, dtype, device, gen):
    return randn(p["shape"], dtype, device, gen)


def _stft_inputs(p, dtype, device, gen):
    return {"x": _signal(p, dtype, device, gen), "n_fft": p["n_fft"], "hop": p["hop"],
            "win_length": p.get("win_length"), "pad": p.get("pad"), "polar": False,
            "precision": p.get("precision", "ieee")}


def _stft_frames(p):
    pad = p["n_fft"] // 2 if p.get("pad") is None else p["pad"]
    return 1 + (p["shape"][-1] + 2 * pad - p["n_fft"]) // p["hop"]


def _spec_alloc(inputs):
    x = inputs["x"]
    T = 1 + (x.shape[-1] + 2 * (inputs["n_fft"] // 2 if inputs["pad"] is None else inputs["pad"]) - inputs["n_fft"]) \
        // inputs["hop"]
    return x.new_empty(x.shape[0], inputs["n_fft"] // 2 + 1, T), x.new_empty(x.shape[0], inputs["n_fft"] // 2 + 1, T)


def _transform_flops_per_frame(n_fft: int) -> float:
    """The arithmetic the kernel that runs does per frame: a direct DFT / GEMM takes 2 real MACs per tap per bin
    (cos and sin); the four-step FFT (power-of-two n_fft >= 1024) does n_fft/(2·(N1 + N2)) times less (1024: 8x).
    Declaring the DFT's count for the FFT would put the roofline above 100% of peak."""
    split = fft_split(n_fft)
    dft = 4.0 * n_fft * (n_fft // 2 + 1)
    return dft if split is None else dft * 2 * (split[0] + split[1]) / n_fft


def _dft_flops(p):
    return p["shape"][0] * _stft_frames(p) * _transform_flops_per_frame(p["n_fft"])


def _stft_bytes(p, itemsize):
    B, N = p["shape"]
    return itemsize * (B * N + 2 * B * (p["n_fft"] // 2 + 1) * _stft_frames(p))


FFT_NFFT = 1024  # the four-step FFT variants are declared at the speech size; the DFT GEMMs at a non-power of two

GEMM_NFFT = 1000


def _fft_table_sig(names):
    return {f"{n}_ptr": "*fp32" for n in names}


def _stft_fft_variants(dt: str, mode: str, prec: str) -> list[AotVariant]:
    """mode: 'polar' / 'cartesian' (the spectrum [B, F, T] in dt) or 'power' / 'magnitude' (float32 [B, T, F])."""
    out_dt = dt if mode in ("polar", "cartesian") else "fp32"
    bt, warps = FFT_TILES[prec]
    n1, n2 = fft_split(FFT_NFFT)
    return [AotVariant(
        f"_stft_fft_kernel[{dt},n_fft={FFT_NFFT},{mode},{prec}]", _stft_fft_kernel,
        {"x_ptr": f"*{dt}", **_fft_table_sig(("f1c", "f1s", "twc", "tws", "f2c", "f2s", "win")), "a_ptr": f"*{out_dt}",
         "c_ptr": f"*{out_dt}", "N": "i32", "T": "i32", "hop": "i32", "pad": "i32", "mag_eps": "fp32"},
        {"POLAR": mode == "polar", "POWER": mode in ("power", "magnitude"), "MAGNITUDE": mode == "magnitude",
         "PRECISION": prec, "N1": n1, "N2": n2, "BT": bt}, num_warps=warps, expect_mma=prec != "ieee")]


def _stft_variants():
    out = []
    for dt in ("fp32", "fp16", "bf16"):
        sig = {"x_ptr": f"*{dt}", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "mag_ptr": f"*{dt}", "phase_ptr": f"*{dt}",
               "N": "i32", "T": "i32", "hop": "i32", "pad": "i32"}
        for polar in (True, False):
            out.append(AotVariant(f"_stft_direct_kernel[{dt},n_fft=20,polar={polar}]", _stft_direct_kernel, sig,
                                  {"N_FFT": 20, "NF": 11, "POLAR": polar, "BLOCK_T": DIRECT_BLOCK_T, "BLOCK_F": 16}))
            for prec in MODES:
                out += _stft_fft_variants(dt, "polar" if polar else "cartesian", prec)
                out.append(AotVariant(
                    f"_stft_gemm_kernel[{dt},n_fft={GEMM_NFFT},polar={polar},{prec}]", _stft_gemm_kernel,
                    {**sig, "NF": "i32"},
                    {"N_FFT": GEMM_NFFT, "POLAR": polar, "PRECISION": prec, "BLOCK_T": STFT_TILE[0],
                     "BLOCK_F": STFT_TILE[1], "BLOCK_K": STFT_TILE[2]}, num_warps=GEMM_WARPS,
                    expect_mma=prec != "ieee"))
    return out


_STFT_CASES = [
    Case({"shape": (2, 97), "n_fft": 20, "hop": 5}),
    Case({"shape": (1, 1801), "n_fft": 1024, "hop": 256}),
    Case({"shape": (1, 1500), "n_fft": 1024, "hop": 256, "win_length": 800, "pad": 384}),
    Case({"shape": (3, 64), "n_fft": 16, "hop": 4, "win_length": 12}),
    Case({"shape": (1, 72000), "n_fft": 20, "hop": 5}, devices=("cuda",)),
    Case({"shape": (2, 120011), "n_fft": 1024, "hop": 256}, devices=("cuda",)),
    Case({"shape": (1, 24000), "n_fft": 1024, "hop": 256, "precision": "tf32"}, devices=("cuda",), dtypes=("float32",)),
    # tf32x3 is held to the float32 row: three tensor-core products per term, float32-class error
    Case({"shape": (2, 120011), "n_fft": 1024, "hop": 256, "precision": "tf32x3"}, devices=("cuda",),
         dtypes=("float32",)),
]


register(Kernel(
    name="stft", family="spectral", used_by=("kokoro",),
    doc="X[b,k,t] = Σ_n w[n] x_reflect[b, t·hop + n − pad] e^{−2πikn/n_fft}; periodic Hann; registry checks (Re, Im)",
    make_inputs=_stft_inputs, alloc_out=_spec_alloc, launch=stft, oracle=stft_oracle, peer=stft_torch,
    cases=_STFT_CASES, tol_kind="reduction",
    bench=[BenchShape("Kokoro source STFT 10 s [1, 240000] n_fft 20 hop 5", {"shape": (1, 240000), "n_fft": 20,
                      "hop": 5}, flops=_dft_flops, bytes=_stft_bytes),
           BenchShape("speech STFT 10 s @24k [1, 240000] n_fft 1024 hop 256",
                      {"shape": (1, 240000), "n_fft": 1024, "hop": 256}, flops=_dft_flops, bytes=_stft_bytes),
           BenchShape("large [16, 480000] n_fft 1024 hop 256", {"shape": (16, 480000), "n_fft": 1024, "hop": 256},
                      flops=_dft_flops, bytes=_stft_bytes),
           BenchShape("large [16, 480000] n_fft 1024 hop 256, tf32x3 FFT", {"shape": (16, 480000), "n_fft": 1024,
                      "hop": 256, "precision": "tf32x3"}, flops=_dft_flops, bytes=_stft_bytes, dtypes=("float32",))],
    variants=_stft_variants,
))


def _istft_len(n_fft, hop, T):
    return hop * (T - 1) + n_fft - 2 * (n_fft // 2)


def _istft_inputs(p, dtype, device, gen):
    B, NF, T = p["shape"]
    n_fft = 2 * (NF - 1)
    return {"magnitude": rand(p["shape"], dtype, device, gen, 0.0, 2.0),
            "phase": rand(p["shape"], dtype, device, gen, -math.pi, math.pi), "n_fft": n_fft, "hop": p["hop"],
            "win_length": p.get("win_length"), "precision": p.get("precision", "ieee")}


def _istft_alloc(inputs):
    a = next(v for v in inputs.values() if isinstance(v, torch.Tensor))
    return a.new_empty(a.shape[0], _istft_len(inputs["n_fft"], inputs["hop"], a.shape[-1]))


def _istft_flops(p):
    # the inverse transform per frame (Re·cos, Im·sin per bin and tap, or the FFT's share of it)
    B, C, T = p["shape"]
    NF = C // 2 if p.get("exp_sin") else C
    return B * T * _transform_flops_per_frame(2 * (NF - 1))


def _istft_bytes(p, itemsize):
    B, C, T = p["shape"]
    NF = C // 2 if p.get("exp_sin") else C
    reads = B * C * T * (1 if p.get("exp_sin") else 2)
    return itemsize * (reads + B * _istft_len(2 * (NF - 1), p["hop"], T))


def _istft_variants(exp_sin: bool):
    out = []
    n1, n2 = fft_split(FFT_NFFT)
    for dt in ("fp32", "fp16", "bf16"):
        spec = {"a_ptr": f"*{dt}", "c_ptr": f"*{dt}"}
        bt, warps, mode, chunk = istft_ola_config(20, 5)
        out.append(AotVariant(f"_istft_ola_kernel[{dt},n_fft=20,hop=5,exp_sin={exp_sin}]", _istft_ola_kernel,
                              {**spec, **_fft_table_sig(("even", "odd", "win", "wsq")), "y_ptr": f"*{dt}",
                               "T": "i32", "L_out": "i32", "batch_stride": "i64"},
                              {"N_FFT": 20, "HOP": 5, "NF": 11, "EXP_SIN": exp_sin, "FAST": True, "MODE": mode,
                               "BT": bt, "S_P": chunk}, num_warps=warps))
        f, rows, warps, reduce, split = istft_rows_config(20, 5)
        for edge in (False, True):  # the interior programs' launch and the edges'
            out.append(AotVariant(f"_istft_rows_kernel[{dt},n_fft=20,hop=5,exp_sin={exp_sin},edge={edge}]",
                                  _istft_rows_kernel,
                                  {**spec, "y_ptr": f"*{dt}", "T": "i32", "L_out": "i32", "batch_stride": "i64",
                                   "p_first": "i32", "n_head": "i32", "p_tail": "i32"},
                                  {"N_FFT": 20, "HOP": 5, **small_istft_constants(20, 20, split), "EXP_SIN": exp_sin,
                                   "FAST": True, "REDUCE": reduce, "F": f, "R": rows, "EDGE": edge},
                                  num_warps=warps))
        for prec in MODES:
            bt, warps = FFT_TILES[prec]
            out.append(AotVariant(f"_istft_fft_frames_kernel[{dt},n_fft={FFT_NFFT},exp_sin={exp_sin},{prec}]",
                                  _istft_fft_frames_kernel,
                                  {**spec, **_fft_table_sig(("g2c", "g2s", "twc", "tws", "g1c", "g1s", "win")),
                                   "frames_ptr": "*fp32", "T": "i32", "batch_stride": "i64"},
                                  {"EXP_SIN": exp_sin, "FAST": True, "PRECISION": prec, "N1": n1, "N2": n2, "BT": bt},
                                  num_warps=warps, expect_mma=prec != "ieee"))
            out.append(AotVariant(f"_istft_frames_kernel[{dt},n_fft={GEMM_NFFT},exp_sin={exp_sin},{prec}]",
                                  _istft_frames_kernel,
                                  {**spec, "icos_ptr": "*fp32", "isin_ptr": "*fp32", "frames_ptr": "*fp32",
                                   "T": "i32", "NF": "i32", "batch_stride": "i64"},
                                  {"N_FFT": GEMM_NFFT, "EXP_SIN": exp_sin, "PRECISION": prec,
                                   "BLOCK_T": ISTFT_FRAMES_TILE[0], "BLOCK_N": ISTFT_FRAMES_TILE[1],
                                   "BLOCK_F": ISTFT_FRAMES_TILE[2]}, num_warps=GEMM_WARPS,
                                  expect_mma=prec != "ieee"))
        out.append(AotVariant(f"_overlap_add_kernel[{dt},n_fft=1024]", _overlap_add_kernel,
                              {"frames_ptr": "*fp32", "wsq_ptr": "*fp32", "y_ptr": f"*{dt}", "T": "i32",
                               "L_out": "i32", "pad": "i32", "hop": "i32"},
                              {"N_FFT": 1024, "OVERLAP": 4, "BLOCK_S": OLA_BLOCK_S}))
    return out


register(Kernel(
    name="istft", family="spectral", used_by=(),
    doc="y = OLA_t(w · irfft(mag·e^{i·phase})) / OLA_t(w²), centre-trimmed (torch.istft, center=True)",
    make_inputs=_istft_inputs, alloc_out=_istft_alloc, launch=istft, oracle=istft_oracle, peer=istft_torch,
    cases=[Case({"shape": (2, 11, 23), "hop": 5}),
           Case({"shape": (1, 513, 5), "hop": 256}),
           Case({"shape": (1, 9, 13), "hop": 4, "win_length": 14}),
           Case({"shape": (2, 11, 48001), "hop": 5}, devices=("cuda",)),
           Case({"shape": (1, 513, 938), "hop": 256}, devices=("cuda",)),
           Case({"shape": (2, 513, 301), "hop": 256, "precision": "tf32"}, devices=("cuda",), dtypes=("float32",)),
           Case({"shape": (2, 513, 301), "hop": 256, "precision": "tf32x3"}, devices=("cuda",),
                dtypes=("float32",))],
    tol_kind="reduction",
    bench=[BenchShape("iSTFT 10 s [1, 11, 48001] n_fft 20 hop 5", {"shape": (1, 11, 48001), "hop": 5},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("iSTFT 10 s @24k [1, 513, 938] n_fft 1024 hop 256", {"shape": (1, 513, 938), "hop": 256},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 11, 96001] n_fft 20 hop 5", {"shape": (16, 11, 96001), "hop": 5},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 513, 1876] n_fft 1024 hop 256", {"shape": (16, 513, 1876), "hop": 256},
                      flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 513, 1876] n_fft 1024 hop 256, tf32x3 FFT", {"shape": (16, 513, 1876), "hop": 256,
                      "precision": "tf32x3"}, flops=_istft_flops, bytes=_istft_bytes, dtypes=("float32",))],
    variants=lambda: _istft_variants(False),
))


def _exp_sin_inputs(p, dtype, device, gen):
    B, C, T = p["shape"]
    # log-magnitudes around e^-1 (a trained generator's range) and pre-sine phases of a few radians.
    x = torch.cat([torch.randn(B, C // 2, T, generator=gen) - 1.0, torch.randn(B, C // 2, T, generator=gen) * 3.0], 1)
    return {"x": x.to(dtype).to(device), "n_fft": C - 2, "hop": p["hop"], "precision": p.get("precision", "ieee")}


register(Kernel(
    name="istft_exp_sin", family="spectral", used_by=("kokoro",),
    doc="iSTFTNet generator tail: y = istft(exp(x[:, :F]), sin(x[:, F:])) in one gather kernel",
    make_inputs=_exp_sin_inputs, alloc_out=_istft_alloc, launch=istft_exp_sin, oracle=istft_exp_sin_oracle,
    peer=istft_exp_sin_torch,
    cases=[Case({"shape": (2, 22, 37), "hop": 5}),
           Case({"shape": (1, 18, 16), "hop": 4}),
           Case({"shape": (1, 22, 48001), "hop": 5}, devices=("cuda",)),
           Case({"shape": (3, 22, 9001), "hop": 5}, devices=("cuda",))],
    tol_kind="reduction",
    bench=[BenchShape("Kokoro generator tail 10 s [1, 22, 48001]", {"shape": (1, 22, 48001), "hop": 5,
                      "exp_sin": True}, flops=_istft_flops, bytes=_istft_bytes),
           BenchShape("large [16, 22, 96001]", {"shape": (16, 22, 96001), "hop": 5, "exp_sin": True},
                      flops=_istft_flops, bytes=_istft_bytes)],
    variants=lambda: _istft_variants(True),
))


def _mel_inputs(p, dtype, device, gen):
    NF = p["n_fft"] // 2 + 1
    if p.get("filterbank", "slaney") == "slaney":
        fb = torch.tensor(slaney_mel_filterbank(_SR, p["n_fft"], p["n_mels"]), dtype=torch.float32)
    else:
        fb = torch.rand(p["n_mels"], NF, generator=gen) * 0.05
    return {"x": _signal(p, dtype, device, gen) * 0.1, "mel_basis": fb.to(device), "n_fft": p["n_fft"],
            "hop": p["hop"], "win_length": p.get("win_length"), "pad": p.get("pad"), "magnitude": p["magnitude"],
            "mag_eps": 1e-9, "eps": 1e-5, "precision": p.get("precision", "ieee")}


def _mel_alloc(inputs):
    x = inputs["x"]
    p = {"shape": tuple(x.shape), "n_fft": inputs["n_fft"], "hop": inputs["hop"], "pad": inputs["pad"]}
    return x.new_empty(x.shape[0], inputs["mel_basis"].shape[0], _stft_frames(p))


def _mel_flops(p):
    return _dft_flops(p) + 2.0 * p["shape"][0] * _stft_frames(p) * p["n_mels"] * (p["n_fft"] // 2 + 1)


def _mel_bytes(p, itemsize):
    B, N = p["shape"]
    return itemsize * (B * N + B * p["n_mels"] * _stft_frames(p)) + 4 * p["n_mels"] * (p["n_fft"] // 2 + 1)


def _mel_variants(magnitude: bool):
    gemm = [AotVariant(f"_mel_kernel[{dt},n_fft={GEMM_NFFT},magnitude={magnitude},{prec},block_t={bt}]", _mel_kernel,
                       {"x_ptr": f"*{dt}", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "mel_ptr": "*fp32",
                        "out_ptr": f"*{dt}", "N": "i32", "T": "i32", "hop": "i32", "pad": "i32", "NF": "i32",
                        "NM": "i32", "mag_eps": "fp32", "log_eps": "fp32"},
                       {"N_FFT": GEMM_NFFT, "MAGNITUDE": magnitude, "PRECISION": prec, "BLOCK_T": bt, "BLOCK_F": bf,
                        "BLOCK_K": MEL_BLOCK_K, "BLOCK_M": MEL_BLOCK_M},
                       num_warps=GEMM_WARPS, expect_mma=prec != "ieee")
            for dt in ("fp32", "fp16", "bf16") for prec in MODES
            for bt, bf in (MEL_TILES[:1] if prec == "tf32x3" else MEL_TILES)]
    fft = [v for dt in ("fp32", "fp16", "bf16") for prec in MODES
           for v in _stft_fft_variants(dt, "magnitude" if magnitude else "power", prec)]
    project = [AotVariant(f"_mel_project_kernel[{dt},{prec},block_t={bt}]", _mel_project_kernel,
                          {"s_ptr": "*fp32", "mel_ptr": "*fp32", "out_ptr": f"*{dt}", "T": "i32", "NF": "i32",
                           "NM": "i32", "log_eps": "fp32"},
                          {"PRECISION": prec, "BLOCK_T": bt, "BLOCK_M": bm, "BLOCK_K": bk}, num_warps=warps,
                          expect_mma=prec != "ieee")
               for dt in ("fp32", "fp16", "bf16") for prec in MODES for bt, bm, bk, warps in MEL_PROJECT_TILES]
    return gemm + fft + project


# BigVGAN's convention: reflect pad (n_fft − hop)/2 per side, no centring.
_BIGVGAN = {"n_fft": 1024, "hop": 256, "pad": 384}

_MEL_CASES = [
    Case({"shape": (1, 2000), **_BIGVGAN, "n_mels": 100, "filterbank": "slaney"}),
    Case({"shape": (2, 700), "n_fft": 64, "hop": 16, "n_mels": 20, "filterbank": "random"}),
    Case({"shape": (1, 1201), "n_fft": 256, "hop": 64, "win_length": 200, "n_mels": 129, "filterbank": "slaney"}),
    Case({"shape": (1, 240000), **_BIGVGAN, "n_mels": 100, "filterbank": "slaney"}, devices=("cuda",)),
    Case({"shape": (2, 44100), "n_fft": 2048, "hop": 512, "n_mels": 128, "filterbank": "random"}, devices=("cuda",)),
    # tf32 (~1e-3 relative per bin) on the dense random filterbank: a Slaney band of 2-3 low bins that happen to be
    # near zero turns that absolute error into a large log error, which says nothing about the kernel.
    Case({"shape": (1, 48000), **_BIGVGAN, "n_mels": 100, "filterbank": "random", "precision": "tf32"},
         devices=("cuda",), dtypes=("float32",)),
    Case({"shape": (2, 48000), **_BIGVGAN, "n_mels": 100, "filterbank": "slaney", "precision": "tf32x3"},
         devices=("cuda",), dtypes=("float32",)),
]

_MEL_BENCH = [("BigVGAN mel 10 s @24k [1, 240000] n_fft 1024 hop 256 100 mels",
               {"shape": (1, 240000), **_BIGVGAN, "n_mels": 100}),
              ("large [16, 480000] n_fft 1024 hop 256 100 mels", {"shape": (16, 480000), **_BIGVGAN, "n_mels": 100}),
              ("large [16, 480000] n_fft 1024 hop 256 100 mels, tf32x3 FFT",
               {"shape": (16, 480000), **_BIGVGAN, "n_mels": 100, "precision": "tf32x3"})]


for _name, _magnitude in (("mel_spectrogram", False), ("mel_spectrogram_magnitude", True)):
    register(Kernel(
        name=_name, family="spectral", used_by=("bigvgan",) if _magnitude else (),
        doc="log(max(M · S, eps)), S = " + ("sqrt(Re² + Im² + mag_eps)" if _magnitude else "Re² + Im²")
            + " of the reflect-padded periodic-Hann STFT; M [n_mels, F]",
        make_inputs=lambda p, dt, dev, g: _mel_inputs(p, dt, dev, g),
        alloc_out=_mel_alloc, launch=mel_spectrogram, oracle=mel_oracle, peer=mel_torch,
        cases=[Case({**c.params, "magnitude": _magnitude}, c.devices, c.dtypes) for c in _MEL_CASES],
        tol_kind="reduction",
        bench=[BenchShape(label, {**p, "magnitude": _magnitude}, flops=_mel_flops, bytes=_mel_bytes,
                          dtypes=("float32",) if "precision" in p else None)
               for label, p in _MEL_BENCH],
        variants=lambda m=_magnitude: _mel_variants(m),
    ))
