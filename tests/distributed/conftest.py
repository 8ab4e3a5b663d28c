"""The fixtures the batch and Ray tests share: the manifest, one uninterrupted single-process run of it (the
reference every other run is compared with), and one local Ray cluster for the whole session, shut down at the
end with none of its processes left."""
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.distributed import manifests
from tests.distributed.helpers import ROOT, run_batch


@pytest.fixture(scope="session")
def manifest(tmp_path_factory):
    return manifests.write(tmp_path_factory.mktemp("manifest") / "items.jsonl")


@pytest.fixture(scope="session")
def reference(manifest, tmp_path_factory):
    """The folder of one uninterrupted run of the whole manifest."""
    out = tmp_path_factory.mktemp("reference")
    done = run_batch(manifest, out)
    assert done.returncode == 3, done.stderr  # 3: some items failed (the bad ones)
    return out


def _processes_of(folder: str) -> list[str]:
    """The live processes whose command line names `folder` (Ray's gcs_server, raylet and workers do)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if folder in cmdline:
            found.append(f"{pid}: {cmdline[:120]}")
    return found


@pytest.fixture(scope="session")
def ray_cluster():
    """The address of a local 2-CPU cluster (this process its first driver); Serve, if started, and the cluster
    are shut down after the last test, and no process of it may be left."""
    import ray

    temp = tempfile.mkdtemp(prefix="tw-ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)  # the workers import tilewave
    try:
        context = ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, log_to_driver=False)
    finally:
        os.environ.pop("PYTHONPATH") if path is None else os.environ.__setitem__("PYTHONPATH", path)
    try:
        yield context.address_info["address"]
    finally:
        from ray import serve

        serve.shutdown()  # a no-op when no test started it
        ray.shutdown()
        deadline = time.monotonic() + 30
        while _processes_of(temp) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _processes_of(temp) == [], "Ray processes left running"
        shutil.rmtree(temp, ignore_errors=True)
