"""The AOT gate compiles for sm_90 without a GPU and rejects what a GPU would reject."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_build_refuses_kernels_imported_for_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    code = ("from tilewave.harness.build import run_build; from tilewave.spec import REGISTRY; "
            "from tilewave.harness.catalogue import load_all_kernels; load_all_kernels(); run_build(REGISTRY, 'snake')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0 and "without TRITON_INTERPRET" in proc.stderr, proc.stderr[-2000:]
    assert "cache_key" not in proc.stdout + proc.stderr


def test_build_command_compiles_with_the_interpreter_switch_set():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tilewave", "build", "-f", "snake"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "TRITON_INTERPRET=1 ignored" in proc.stderr
    assert proc.stdout.splitlines()[-1].endswith(" 0 failed") and "[PASS]" in proc.stdout


def test_the_ptxas_report_is_read_from_the_compile_or_the_variant_is_named():
    from tilewave.harness.build import _ptxas_report

    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas info    : Function properties for k\n"
           "    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
           "ptxas info    : Used 255 registers, used 1 barriers, 384 bytes cmem[0]\n")
    assert _ptxas_report(log, "k[v1]") == (255, 8)
    for bad in ("", "ptxas fatal   : Unsupported .version 9.4; current version is '8.8'\n", log + log):
        with pytest.raises(RuntimeError, match=r"for k\[v1\]"):
            _ptxas_report(bad, "k[v1]")


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


def _build(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "tilewave", "build", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_the_gate_over_two_processes_reports_what_one_process_does_in_the_same_order():
    one, two = _build("-f", "snake", "-j", "1"), _build("-f", "snake", "-j", "2")
    assert one.returncode == two.returncode == 0, one.stdout[-2000:] + one.stderr + two.stderr
    lines = one.stdout.splitlines()
    assert sum(l.startswith("[PASS]") for l in lines) >= 4, one.stdout
    assert two.stdout == one.stdout


def test_the_gate_refuses_fewer_than_one_job():
    proc = _build("-f", "snake", "-j", "0")
    assert proc.returncode == 2 and "--jobs must be at least 1" in proc.stderr, proc.stderr
