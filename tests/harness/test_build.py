"""The AOT gate compiles for sm_90 without a GPU and rejects what a GPU would reject."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _probe(bad_name: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, str(Path(__file__).with_name("aot_probe.py")), bad_name],
                          capture_output=True, text=True, env=env, timeout=300)


def test_invalid_dot_variant_fails_the_gate():
    proc = _probe("bad[bf16 K=8]")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    good = next(l for l in lines if "good[128x128x64]" in l)
    bad = next(l for l in lines if "bad[bf16 K=8]" in l)
    assert good.startswith("[PASS]") and "mma=wgmma" in good, good
    assert bad.startswith("[FAIL]"), bad
    assert lines[-1] == "1 passed, 1 failed"


def test_build_refuses_interpreter_mode():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    code = "from tilewave.harness.build import run_build; from tilewave.spec import REGISTRY; run_build(REGISTRY, None)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0 and "unset TRITON_INTERPRET" in proc.stderr


def test_declared_aligned_integers_compile_the_launched_form():
    # the runtime specialises a stride that is a multiple of 16; only then does Triton pipeline the loads
    # through cp.async into shared memory. The gate must compile that form when a variant declares it.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("aot_align_probe.py"))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shared = {}
    for line in proc.stdout.splitlines():
        fields = dict(f.split("=", 1) for f in line.split())
        assert fields["passed"] == "True", line
        shared[fields["aligned"]] = int(fields["shared"])
    assert shared["stride"] > shared["-"], shared
    # a recorded launch's specialisation compiles the same form as the declaration
    assert shared["launch:stride"] == shared["stride"], shared
    assert "launch:K=1" in shared, shared
