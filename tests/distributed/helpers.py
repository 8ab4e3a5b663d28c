"""Running `tilewave batch` as its own process (as a user does, and so that it can be killed), and reading what a
run left in its folder."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile
import torch

from tilewave.spec.tolerance import scaled_max_error, tolerance

ROOT = Path(__file__).resolve().parents[2]


def batch_env() -> dict:
    # One thread, as in a Ray CPU actor (Ray sets OMP_NUM_THREADS to its CPUs): float sums then run in one order
    # in every process (one thread against two moved these items' audio by up to 2e-3 on this CPU).
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def batch_command(*args) -> list[str]:
    # float32 named: the CLI's default dtype (auto) is bfloat16 on a CPU with native bfloat16, and the runs are
    # compared with each other and with run_ray's Options, whose default is float32, within float32's bound
    return [sys.executable, "-m", "tilewave", "batch", "--dtype", "float32", *map(str, args)]


def run_batch(*args, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(batch_command(*args), env=batch_env(), capture_output=True, text=True, timeout=timeout)


def results(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def audio_files(folder: Path) -> dict[str, np.ndarray]:
    """Every audio file in the folder (16-bit samples), each read whole: a partial one would not decode."""
    return {f.stem: soundfile.read(f, dtype="int16")[0] for f in sorted(folder.glob("*.wav"))}


def assert_same_audio(got: dict, expected: dict) -> None:
    """The same files, each the same length and within the batched pass's bound of the other (an item's audio
    depends on the batch it ran in that far: tests/models/test_kokoro_batch.py)."""
    assert sorted(got) == sorted(expected)
    for name, ref in expected.items():
        out = got[name]
        assert out.size == ref.size, name
        error = scaled_max_error(torch.from_numpy(out / 32768.0), torch.from_numpy(ref / 32768.0))
        assert error <= tolerance("float32", "recurrence"), (name, error)


def partial_files(folder: Path) -> list[str]:
    return sorted(f.name for f in folder.iterdir() if f.name.startswith("."))


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of each file: a file written again changes both."""
    return {f.name: (f.stat().st_ino, f.stat().st_mtime_ns) for f in folder.iterdir() if f.suffix == ".wav"}


def kill_after(command: list[str], folder: Path, files: int, timeout: float = 180) -> None:
    """Run a batch driver and SIGKILL it as soon as `files` audio files are in `folder` (a job killed mid-way)."""
    driver = subprocess.Popen(command, env=batch_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while len(list(folder.glob("*.wav"))) < files:
            assert driver.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, f"no {files} files within {timeout} s"
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait(timeout=30)
