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


def test_page_out_hands_back_a_mapped_tensors_pages_and_never_changes_a_value(tmp_path):
    import torch

    from tilewave.engine.host_memory import page_out

    def resident_file_kib():
        return int(next(line for line in open("/proc/self/status") if line.startswith("RssFile")).split()[1])

    saved = torch.randn(8, 1 << 20, generator=torch.Generator().manual_seed(3))  # 32 MB, anonymous
    torch.save({"w": saved}, tmp_path / "w.pt")
    mapped = torch.load(tmp_path / "w.pt", mmap=True, weights_only=True)["w"]
    assert torch.equal(mapped, saved)  # every page read, so resident
    before = resident_file_kib()
    assert page_out([mapped, saved]) >= 2 * 32e6 - 2 * 4096 * 2  # whole pages of both
    assert before - resident_file_kib() > 24_000  # most of the mapped 32 MB left the process
    assert torch.equal(mapped, saved) and torch.isfinite(saved).all()  # read back; the anonymous one kept
    assert page_out([saved[:0], saved[0, :10]]) == 0  # less than a whole page: nothing
