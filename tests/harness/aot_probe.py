"""Run in a subprocess without TRITON_INTERPRET by test_build.py: a tl.dot kernel compiled for sm_90 at a
legal tile (must pass, with wgmma) and at an illegal one (bf16 with K = 8: must fail, as on a real GPU)."""
import sys

import triton
import triton.language as tl

from tilewave.harness.build import run_build
from tilewave.spec import AotVariant, BenchShape, Case, Kernel, Registry


@triton.jit
def _tile_dot(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m, n, k = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + m[:, None] * BK + k[None, :])
    b = tl.load(b_ptr + k[:, None] * BN + n[None, :])
    tl.store(c_ptr + m[:, None] * BN + n[None, :], tl.dot(a, b))


def variants():
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32"}
    return [AotVariant("good[128x128x64]", _tile_dot, sig, {"BM": 128, "BN": 128, "BK": 64}, expect_mma=True),
            AotVariant(sys.argv[1], _tile_dot, sig, {"BM": 16, "BN": 16, "BK": 8}, expect_mma=True)]


reg = Registry()
reg.register(Kernel("tile_dot", "probe", "", make_inputs=None, alloc_out=None, launch=None, oracle=None,
                    peer=None, cases=[Case({})], bench=[BenchShape("x", {}, lambda p: 1, lambda p, i: 1)],
                    variants=variants))
results = run_build(reg, None)
sys.exit(0 if all(r.passed for r in results) else 1)
