"""The harness commands' exit codes: they fail loudly rather than pass on nothing."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tilewave(*args, timeout=300, env=None):
    return subprocess.run([sys.executable, "-m", "tilewave", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env)


def test_test_command_passes_and_counts():
    proc = _tilewave("test", "-f", "leaky_relu", "--device", "cpu", "--seed", "7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.endswith(" passed, 0 failed") and not last.startswith("0 passed")


def test_test_command_fails_on_empty_selection():
    proc = _tilewave("test", "-f", "no-such-kernel", "--device", "cpu")
    assert proc.returncode == 1 and "no test cases" in proc.stderr


def test_bench_without_gpu_says_so():
    proc = _tilewave("bench", env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 2 and "no CUDA device" in proc.stderr
