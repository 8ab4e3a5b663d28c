"""host_memory: a CPU run keeps freed blocks for reuse, so a large activation made again is not faulted in again;
a process configured for a memory budget and TILEWAVE_HOST_MALLOC=system leave malloc returning them. Each case runs
in a fresh interpreter: malloc's settings are the process's (engine.process.configure_process sets them)."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's (Linux)")

FAULTS = r"""
import json, resource, sys
import torch
from tilewave.engine.host_memory import keep_freed_memory
from tilewave.engine.process import configure_process
mode = sys.argv[1]
applied = None
if mode == "configured":
    configure_process("cpu")
elif mode == "budget":
    configure_process("cpu")
    configure_process("cpu", memory_budget="2GB")  # a budget puts glibc's return of large blocks back
elif mode == "call":
    applied = keep_freed_memory()
x = torch.randn(64, 1 << 18)  # 64 MB: above any mmap threshold glibc would pick on its own
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(32):  # each product a new 64 MB block (16,384 pages), the previous one freed
    x = x * 1.0001
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"faults": faults, "applied": applied, "finite": bool(torch.isfinite(x).all())}))
"""


def run(mode, **env):
    done = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_process_configured_for_a_cpu_keeps_freed_blocks_so_a_new_activation_is_not_faulted_in_again():
    plain, kept = run("none"), run("configured")
    # 32 fresh 64 MB blocks are ~520,000 page faults when each is mapped anew; kept, a few blocks are made
    assert plain["faults"] > 400_000 and kept["faults"] < plain["faults"] / 3, (plain, kept)
    assert plain["finite"] and kept["finite"]


def test_a_memory_budget_and_the_environment_switch_leave_malloc_as_it_is():
    assert run("budget")["faults"] > 400_000
    off = run("call", TILEWAVE_HOST_MALLOC="system")
    assert off["applied"] is False and off["faults"] > 400_000
