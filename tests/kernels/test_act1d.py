"""act1d properties the registry cases can't express: every tile seam (row edges handed over between tile rows,
the rows shared by neighbouring tiles, signal ends) at lengths around tile multiples with a small tile; other
filter lengths (their halo changes the column count); the sine at large |alpha * u| (the SFU form on the
GPU); and, compiled for sm_90, 16-byte stores of y (the time-major form's too)."""
import os
import subprocess
import sys

import pytest
import torch

from tests.conftest import KERNEL_DEVICE
from tilewave.spec.tolerance import scaled_max_error, tolerance
from tilewave.kernels import antialias as K

TOL = tolerance("float32", "pointwise")


def _inputs(shape, seed, scale=1.0, log_scale=True):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen) * scale
    C = shape[-2]
    if log_scale:
        alpha, beta = torch.randn(C, generator=gen) * 0.5, torch.randn(C, generator=gen) * 0.5
    else:
        alpha, beta = 0.1 + torch.rand(C, generator=gen) * 2, 0.1 + torch.rand(C, generator=gen) * 2
    return x, alpha, beta


# a tile of 8 rows x 8 columns stores 6 x 8 = 48 outputs: lengths below, at and around one, two and three tiles;
# a program runs up to 2 tiles, so programs with one and with two tiles, full and partial, meet too
@pytest.mark.parametrize("L", [1, 2, 7, 47, 48, 49, 96, 150, 250])
def test_small_tile_seams_match_the_oracle(L):
    x, alpha, beta = _inputs((2, 2, L), seed=L)
    out = K.act1d_poly(x.to(KERNEL_DEVICE), alpha.to(KERNEL_DEVICE), beta.to(KERNEL_DEVICE), True, rows=8, cols=8,
                       num_warps=1, iters=2)
    ref = K.act1d_oracle(x.double(), alpha.double(), beta.double(), True)
    assert scaled_max_error(out, ref) <= TOL


@pytest.mark.parametrize("taps", [4, 8, 16, 24])
def test_other_filter_lengths_match_the_oracle(taps):
    x, alpha, _ = _inputs((1, 2, 131), seed=taps, log_scale=False)
    f = K.resample_filter(taps)
    out = K.act1d_poly(x.to(KERNEL_DEVICE), alpha.to(KERNEL_DEVICE), None, False, f.to(KERNEL_DEVICE),
                       f.to(KERNEL_DEVICE), rows=8, cols=8, num_warps=1)
    ref = K.act1d_oracle(x.double(), alpha.double(), None, False, f.double(), f.double())
    assert scaled_max_error(out, ref) <= TOL


def test_unequal_filters_are_refused_with_their_lengths():
    x = torch.randn(1, 2, 10, device=KERNEL_DEVICE)
    alpha = torch.ones(2, device=KERNEL_DEVICE)
    with pytest.raises(ValueError, match="12 and 8 taps"):
        K.act1d(x, alpha, None, False, K.resample_filter(12, KERNEL_DEVICE), K.resample_filter(8, KERNEL_DEVICE))


def test_sine_holds_float32_tolerance_at_large_arguments():
    # x * 8 and alpha up to 2.1: |alpha * u| reaches ~100, where an unreduced SFU sine would lose ~1e-5
    # (on the GPU the kernel takes the SFU sine, in the interpreter tl.sin)
    L = 20000 if KERNEL_DEVICE == "cuda" else 300
    x, alpha, beta = _inputs((1, 2, L), seed=5, scale=8.0, log_scale=False)
    out = K.act1d_poly(x.to(KERNEL_DEVICE), alpha.to(KERNEL_DEVICE), beta.to(KERNEL_DEVICE), False, rows=32,
                       cols=8, num_warps=1)
    ref = K.act1d_oracle(x.double(), alpha.double(), beta.double(), False)
    assert scaled_max_error(out, ref) <= TOL


_STORES_OF_VARIANT = """
import re, sys, pathlib
from tilewave.harness.build import compile_variant
from tilewave.kernels import antialias as K
prefix, out = sys.argv[1], pathlib.Path(sys.argv[2])
v = next(v for v in K._act1d_variants() if v.name.startswith(prefix) and "ROW_ALIGN=1]" not in v.name)
r = compile_variant("act1d", v, 90, out_dir=out, emit=("ptx",))
assert r.passed, r.line()
print(" ".join(re.findall(r"st\\.global(?:\\.[a-z0-9]+)+", next(out.glob("*.ptx")).read_text())))
"""


@pytest.mark.parametrize("prefix", ["_act1d_poly_kernel[fp32,beta=True", "_act1d_poly_kernel[bf16,beta=True",
                                    "_act1d_time_major_kernel[bf16"])
def test_sm90_build_keeps_y_stores_16_byte_vectors(tmp_path, prefix):
    # The store mask once compared positions with the unaligned length, and Triton split y's stores into scalar
    # ones: a few bytes into each of 32 sectors per warp store (8x the L2 write requests; the H200 ran the
    # kernel at 45% of copy bandwidth, L2-bound). Compiled for sm_90 as launched (16-byte aligned pointers,
    # rows a multiple of the vector; in a process of its own: this one runs Triton's interpreter), every
    # global store is a 16-byte vector: the time-major form's too (its channels adjacent, its zero rows included).
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", _STORES_OF_VARIANT, prefix, str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    stores = run.stdout.split()
    assert stores and all(".v4." in s for s in stores), sorted(set(stores))
