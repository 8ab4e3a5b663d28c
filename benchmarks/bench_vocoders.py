"""Vocoder benchmarks: tilewave against the official PyTorch code on the same device, in the same run.

  1. BigVGAN v2 24 kHz (x256, 1536 channels, 100 mels) on 10 s of audio (937 mel frames), random weights:
     tilewave's generator vs NVIDIA's `bigvgan` package (pure PyTorch, weight norm removed) on the same
     weights; max |difference| of the two outputs is reported beside the times.
  2. The seed's causal decoder (1024 -> 1536 -> ... -> 96 -> 1, x480): 124 latent frames -> 59,520 samples.
Each with its per-stage / per-op profile (tilewave.profiling.StageProfiler; stage names are
'<stage>/<op>' with op one of conv, conv_transpose, act).

Usage: python benchmarks/bench_vocoders.py [--device cuda] [--seconds 10] [--reps 10] [--json out.json]
The official package is optional (installed --no-deps: `pip install --no-deps bigvgan==2.4.1`); without it
its row says so. On a CPU keep --seconds small.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tilewave.models.vocoders.bigvgan import BigVGAN, BigVGANConfig, random_state_dict  # noqa: E402
from tilewave.models.vocoders.causal_decoder import CausalDecoder, CausalDecoderConfig  # noqa: E402
from tilewave.precision import scope as fp32_matmul_precision  # noqa: E402

BIGVGAN_V2_24K = dict(resblock="1", upsample_rates=[4, 4, 2, 2, 2, 2], upsample_kernel_sizes=[8, 8, 4, 4, 4, 4],
                      upsample_initial_channel=1536, resblock_kernel_sizes=[3, 7, 11],
                      resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5], [1, 3, 5]], use_tanh_at_final=False,
                      use_bias_at_final=False, activation="snakebeta", snake_logscale=True, num_mels=100,
                      n_fft=1024, hop_size=256, win_size=1024, sampling_rate=24000, fmin=0, fmax=None)


def median_ms(fn, device: str, reps: int, warmup: int = 2) -> float:
    """Median wall time of fn() in ms, the device synchronised around each run."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def profile(model, x):
    from tilewave.profiling import StageProfiler

    profiler = StageProfiler(x.device)
    model(x, profiler=profiler)
    return profiler.report()


def official_bigvgan(state, device):
    """NVIDIA's generator on the same weights, or the reason it cannot run here."""
    try:
        from tests.models.bigvgan_reference import load

        ref, _, AttrDict = load()
    except ImportError as exc:
        return None, f"official bigvgan package not importable ({exc}); pip install --no-deps bigvgan==2.4.1"
    model = ref.BigVGAN(AttrDict(dict(BIGVGAN_V2_24K)))
    model.load_state_dict(state)
    model.remove_weight_norm()
    return model.to(device).eval(), ""


def bench_bigvgan(device: str, seconds: float, reps: int) -> list[dict]:
    config = BigVGANConfig.from_dict(BIGVGAN_V2_24K)
    state = random_state_dict(config, seed=0)
    ours = BigVGAN.from_state_dict(config, state, device=device)
    frames = int(seconds * config.sampling_rate) // config.hop
    mel = torch.randn(1, config.num_mels, frames, generator=torch.Generator().manual_seed(0)).sub_(4).to(device)
    audio_s = frames * config.hop / config.sampling_rate
    label = f"BigVGAN v2 24 kHz, {audio_s:.2f} s ({frames} frames)"
    rows = [{"workload": label, "impl": "tilewave", "ms": median_ms(lambda: ours(mel), device, reps)}]
    if device == "cuda":  # float32 products on tensor cores at float32-class error
        with fp32_matmul_precision("tf32x3"):
            rows.append({"workload": label, "impl": "tilewave, precision tf32x3",
                         "ms": median_ms(lambda: ours(mel), device, reps)})
            y_x3 = ours(mel).float()
    ref, why = official_bigvgan(state, device)
    if ref is None:
        rows.append({"workload": label, "impl": "official bigvgan (PyTorch)", "ms": None, "note": why})
    else:
        with torch.no_grad():
            rows.append({"workload": label, "impl": "official bigvgan (PyTorch)",
                         "ms": median_ms(lambda: ref(mel), device, reps)})
            y_ref = ref(mel).float()
            rows[0]["max_abs_diff_vs_official"] = (ours(mel).float() - y_ref).abs().max().item()
            if device == "cuda":
                rows[1]["max_abs_diff_vs_official"] = (y_x3 - y_ref).abs().max().item()
    for r in rows:
        r["x_realtime"] = None if r["ms"] is None else audio_s / (r["ms"] / 1e3)
    rows[0]["profile"] = profile(ours, mel)
    return rows


def bench_causal_decoder(device: str, reps: int) -> list[dict]:
    config = CausalDecoderConfig()
    model = CausalDecoder.random(config, seed=0, device=device)
    z = torch.randn(1, config.latent_dim, 124, generator=torch.Generator().manual_seed(0)).to(device)
    audio_s = 124 * config.hop / 24000
    row = {"workload": f"seed causal decoder, 124 frames -> {124 * config.hop} samples", "impl": "tilewave",
           "ms": median_ms(lambda: model(z), device, reps)}
    row["x_realtime"] = audio_s / (row["ms"] / 1e3)
    row["profile"] = profile(model, z)
    return [row]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of 24 kHz audio for BigVGAN")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = bench_bigvgan(args.device, args.seconds, args.reps) + bench_causal_decoder(args.device, args.reps)
    print(f"{'workload':<48} {'impl':<28} {'ms':>9} {'x real time':>12}")
    for r in rows:
        ms = "n/a" if r["ms"] is None else f"{r['ms']:.2f}"
        rt = "" if r["x_realtime"] is None else f"{r['x_realtime']:.1f}"
        print(f"{r['workload']:<48} {r['impl']:<28} {ms:>9} {rt:>12}  {r.get('note', '')}")
    for r in rows:
        if "max_abs_diff_vs_official" in r:
            print(f"tilewave vs official, max |difference| of the audio: {r['max_abs_diff_vs_official']:.2e}")
        if "profile" in r:
            print(f"\nprofile: {r['workload']}\n{r['profile']}")
    if args.json:
        meta = {"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                "torch": torch.__version__}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
