"""Run in a subprocess without TRITON_INTERPRET by test_build.py: a loop of tl.dot over rows `stride` elements
apart, compiled for sm_90 with the stride unspecialised and declared a multiple of 16 (AotVariant.aligned_ints).
Prints the shared memory of each form: only the aligned one gets Triton's cp.async pipeline."""
import triton
import triton.language as tl

from tilewave.harness.build import compile_variant
from tilewave.spec import AotVariant


@triton.jit
def _rows_dot(a_ptr, b_ptr, c_ptr, stride, K, BM: tl.constexpr, BK: tl.constexpr):
    m, k = tl.arange(0, BM), tl.arange(0, BK)
    acc = tl.zeros([BM, BM], tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + m[:, None] * stride + (k0 + k)[None, :])
        b = tl.load(b_ptr + m[:, None] * stride + (k0 + k)[None, :])
        acc += tl.dot(a, tl.trans(b))
    tl.store(c_ptr + m[:, None] * BM + m[None, :], acc)


sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "stride": "i32", "K": "i32"}
for aligned in ((), ("stride",)):
    v = AotVariant("rows_dot", _rows_dot, sig, {"BM": 64, "BK": 64}, num_warps=4, num_stages=3, aligned_ints=aligned)
    r = compile_variant("rows_dot", v, 90)
    print(f"aligned={','.join(aligned) or '-'} passed={r.passed} shared={r.shared_bytes} error={r.error}")

# the same kernel as recorded launches specialise it (harness/launches.py): the stride a multiple of 16, then a
# launch where K is 1 (a constant in the compiled kernel)
from tilewave.harness.launches import LaunchSpec  # noqa: E402

v = AotVariant("rows_dot", _rows_dot, sig, {"BM": 64, "BK": 64}, num_warps=4, num_stages=3)
for name, spec in (("launch:stride", LaunchSpec(aligned_ints=("stride",))),
                   ("launch:K=1", LaunchSpec(consts=(("K", 1),)))):
    r = compile_variant("rows_dot", v, 90, spec=spec)
    print(f"aligned={name} passed={r.passed} shared={r.shared_bytes} error={r.error}")
