"""`tilewave bench --model`: bad values refused where they enter, with the value and what to do; a tiny CPU run
writes every row field, finite; the compute floor's choice of peak."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilewave.cli import main
from tilewave.harness.model_bench import INPUTS, batch_sentences, floor_fraction

ROOT = Path(__file__).resolve().parents[2]
ROW_FIELDS = {"model", "workload", "impl", "precision", "dtype", "audio_s", "ms", "x_real_time", "peak_mb", "gflop",
              "floor_fraction", "official_ms", "x_official"}


@pytest.mark.parametrize("argv, message", [
    (["--model", "vits"], "invalid choice: 'vits'"),
    (["--model", "kokoro", "--precision", "fp64"], "invalid choice: 'fp64'"),
    (["--model", "bigvgan", "--dtype", "int8"], "invalid choice: 'int8'"),
])
def test_bench_refuses_unknown_choices(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--model", "kokoro", "--batch", "8,x"], "--batch '8,x': give batch sizes as whole numbers of at least 1"),
    (["--model", "kokoro", "--batch", "0"], "--batch '0'"),
    (["--model", "bigvgan", "--batch", "8"], "--batch is for --model kokoro"),
    (["--model", "kokoro", "--dtype", "float16"], "the kokoro bench runs in float32 or bfloat16"),
    (["--model", "decoder", "--dtype", "float32", "--dtype", "bfloat16"], "one --dtype"),
    (["--model", "bigvgan", "--seconds", "0"], "--seconds 0.0: a positive length"),
    (["--model", "decoder", "-f", "conv"], "-f and -v select and detail kernel rows"),
    (["--batch", "8"], "--batch belong to a model bench: add --model"),
    (["--model", "kokoro", "--device", "cpu", "--batch", "8", "--graphs"], "--graphs is for --batch on a GPU"),
    (["--model", "kokoro", "--device", "cpu", "--graphs"], "--graphs is for --batch on a GPU"),
    (["--graphs"], "--graphs belong to a model bench: add --model"),
])
def test_bench_refuses_bad_model_options(argv, message, capsys):
    assert main(["bench", *argv]) == 2
    assert message in capsys.readouterr().err


def test_bench_model_on_cuda_without_a_gpu_says_so(monkeypatch, capsys):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    assert main(["bench", "--model", "decoder", "--device", "cuda"]) == 2
    assert "--device cuda but no CUDA device is visible here; use --device cpu" in capsys.readouterr().err


def test_a_tiny_decoder_bench_on_the_cpu_writes_its_rows(tmp_path):
    out = tmp_path / "decoder.json"
    proc = subprocess.run([sys.executable, "-m", "tilewave", "bench", "--model", "decoder", "--device", "cpu",
                           "--seconds", "0.02", "--reps", "1", "--dtype", "bfloat16", "--json", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["device"] == "cpu" and report["dtype"] == "bfloat16" and report["peaks"] is None
    (row,) = report["rows"]
    assert ROW_FIELDS <= set(row) and row["finite"] is True
    for key in ("ms", "x_real_time", "peak_mb", "gflop", "audio_s"):
        assert isinstance(row[key], float) and 0 < row[key] < float("inf"), (key, row[key])
    assert row["floor_fraction"] is None and row["official_ms"] is None  # the CPU has no measured peak
    assert "seed causal decoder, 1 latent frames" in proc.stdout and "n/a" in proc.stdout


def test_floor_fraction_takes_the_peak_of_the_units_doing_the_products():
    peaks = {"float32_GFLOPs": 50_000.0, "tf32_GFLOPs": 400_000.0, "bfloat16_GFLOPs": 800_000.0}
    flop, seconds = 4e9, 1e-3  # 4,000 GFLOP/s
    assert floor_fraction(flop, seconds, "ieee", "float32", peaks) == pytest.approx(0.08)
    assert floor_fraction(flop, seconds, "tf32", "float32", peaks) == pytest.approx(0.01)
    assert floor_fraction(flop, seconds, "tf32x3", "float32", peaks) == pytest.approx(0.03)  # three MMAs a product
    assert floor_fraction(flop, seconds, "tf32x3", "bfloat16", peaks) == pytest.approx(0.005)
    assert floor_fraction(flop, seconds, "ieee", "float32", None) is None


def test_the_packaged_kokoro_inputs_give_mixed_sentences():
    names = json.loads(INPUTS.read_text(encoding="utf-8"))
    assert set(names) == {"short", "medium", "long"}
    sentences = batch_sentences(None, 12)
    assert len(sentences) == 12 and len({len(s) for s in sentences}) > 3
