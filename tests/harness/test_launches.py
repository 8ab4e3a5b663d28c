"""The recorded launches (harness/launches.py) follow Triton's specialisation and fit today's kernels."""
import ast
import importlib

import torch
import triton.language as tl
from triton.runtime.jit import JITFunction

from tilewave.harness.launches import (LaunchSpec, _arg_names, launch_record, load_manifest, specs_for,
                                      undeclared_launches)
from tilewave.spec import AotVariant


def _probe(x_ptr, y_ptr, n, stride, one, scale, BLOCK: tl.constexpr, FLAG: tl.constexpr = False):
    pass


def test_launch_record_follows_triton_specialisation():
    fn = JITFunction(_probe)  # the compiled-mode object whatever TRITON_INTERPRET says
    x = torch.empty(64)
    r = launch_record(fn, (x, x[1:], 3752, 64, 1, 0.5), {"BLOCK": 128, "num_warps": 8})
    assert r["kernel"].endswith("test_launches._probe")
    assert r["constexprs"] == {"BLOCK": "128", "FLAG": "False"}  # a default constexpr is recorded too
    assert (r["num_warps"], r["num_stages"]) == (8, 3)  # Triton's default stages
    assert r["aligned_ints"] == ["stride"]  # 3752 is not a multiple of 16
    assert r["consts"] == [["one", 1]]  # an integer equal to 1 becomes a constant
    assert r["unaligned_ptrs"] == ["y_ptr"]  # x[1:] starts 4 bytes in
    assert r["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "stride": "i32", "scale": "fp32"}


def test_specs_match_by_constexprs_options_and_pointer_types():
    fn = JITFunction(_probe)
    x = torch.empty(64)
    half = torch.empty(64, dtype=torch.float16)
    launches = [launch_record(fn, (x, x, 32, 7, 5, 1.0), {"BLOCK": 64}),
                launch_record(fn, (x, x, 7, 32, 5, 1.0), {"BLOCK": 64}),
                launch_record(fn, (half, half, 32, 32, 5, 1.0), {"BLOCK": 64}),
                launch_record(fn, (x, x, 32, 32, 5, 1.0), {"BLOCK": 32})]
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "stride": "i32", "one": "i32", "scale": "fp32"}
    v = AotVariant("probe", fn, sig, {"BLOCK": 64, "FLAG": False}, num_warps=4, num_stages=3)
    assert specs_for(v, launches) == [LaunchSpec(aligned_ints=("n",)), LaunchSpec(aligned_ints=("stride",))]
    # the BLOCK=32 launch and the fp16 one match no declared variant: the gate compiles them as they are
    extra = undeclared_launches([v], launches)
    assert sorted(e.constexprs["BLOCK"] for e, _ in extra) == [32, 64]
    assert {e.signature["x_ptr"] for e, _ in extra} == {"*fp32", "*fp16"}


def test_recorded_launches_fit_the_kernels():
    # every recorded launch names a kernel that exists, with the arguments it has: a renamed kernel or
    # argument means launches.json must be recorded again (python -m tilewave.harness.launches on a GPU)
    launches, arch = load_manifest()
    assert launches and arch == 90, "tilewave/harness/launches.json is missing, empty or not from an sm_90 GPU"
    for e in launches:
        module, _, name = e["kernel"].rpartition(".")
        params = _arg_names(getattr(importlib.import_module(module), name))
        assert set(e["signature"]) | set(e["constexprs"]) | {n for n, _ in e["consts"]} == params, e["kernel"]
        assert set(e["aligned_ints"]) <= set(e["signature"]) and set(e["unaligned_ptrs"]) <= set(e["signature"])
        for value in e["constexprs"].values():
            ast.literal_eval(value)


def test_a_stale_manifest_is_refused_with_its_remedy():
    fn = JITFunction(_probe)
    x = torch.empty(64)
    entry = launch_record(fn, (x, x, 32, 7, 5, 1.0), {"BLOCK": 64})
    entry["kernel"] = "tilewave.kernels.conv2d._window2d_nhwc_kernel"  # a kernel with other arguments
    try:
        undeclared_launches([], [entry])
    except ValueError as exc:
        assert "stale" in str(exc) and "python -m tilewave.harness.launches" in str(exc)
    else:
        raise AssertionError("a launch recorded for other arguments was accepted")


def test_specs_drop_what_the_kernel_no_longer_specialises():
    # launches recorded before the kernel asked for one binary: the gate compiles what the runtime now launches
    fn = JITFunction(_probe, do_not_specialize=["n"], do_not_specialize_on_alignment=["y_ptr"])
    x = torch.empty(64)
    recorded = [launch_record(JITFunction(_probe), (x, x, 32, 7, 1, 1.0), {"BLOCK": 64}),
                launch_record(JITFunction(_probe), (x, x, 7, 7, 1, 1.0), {"BLOCK": 64})]
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "stride": "i32", "one": "i32", "scale": "fp32"}
    v = AotVariant("probe", fn, sig, {"BLOCK": 64, "FLAG": False}, num_warps=4, num_stages=3)
    assert specs_for(v, recorded) == [LaunchSpec(consts=(("one", 1),), unaligned_ptrs=("y_ptr",))]
    fresh = launch_record(fn, (x, x, 32, 7, 1, 1.0), {"BLOCK": 64})
    assert fresh["aligned_ints"] == [] and fresh["unaligned_ptrs"] == ["y_ptr"]
