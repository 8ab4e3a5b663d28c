"""Per-phase transposed convs: phases stored `stride` apart vs a phase-major scratch + one interleaving pass;
snake + conv (+ residual) on the tap kernel: snake fused into the loads vs one snake pass first.

    PYTHONPATH=. python3 benchmarks/tune_phase_major.py [snake]

Rows are the registry's bench rows that take the per-phase form; each form is checked against the PyTorch peer
(scaled max error) and timed with time_cuda beside it, same run.
"""
import math

import torch

from tilewave.harness.bench import _peer_precision
from tilewave.harness.catalogue import load_all_kernels
from tilewave.harness.runner import _as_tuple
from tilewave.harness.timing import time_cuda
from tilewave.spec.tolerance import scaled_max_error
from tilewave.kernels import conv as K

import diag_timing  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

ROWS = [
    ("conv1d_transpose", "Kokoro gen up x10 512->256 k20 [1, 512, 800]", ("float16", "bfloat16", "float32")),
    ("conv1d_transpose", "BigVGAN v2 up x4 1536->768 k8 [1, 1536, 938]", ("float16", "bfloat16")),
    ("conv1d_transpose", "BigVGAN v2 up x4 1536->768 k8 [1, 1536, 938] tf32", ("float32",)),
    ("conv1d_transpose", "BigVGAN v2 up x4 1536->768 k8 [1, 1536, 938] tf32x3", ("float32",)),
    ("conv1d_transpose", "large up x8 1024->512 k16 [1, 1024, 8192] tf32", ("float32",)),
    ("conv1d_fused", "Kokoro gen leaky_relu+up x10 [1, 512, 800]", ("float16", "bfloat16")),
]


SNAKE_ROWS = [
    ("conv1d_fused", "Kokoro gen resblock snake+conv k11 d5+res [1, 256, 8000]", ("float16", "bfloat16")),
    ("conv1d_fused", "Kokoro gen resblock snake+conv k3+res [1, 128, 48000]", ("float16", "bfloat16")),
    ("conv1d_fused", "decoder residual unit snake+conv k1+res [1, 384, 19840]", ("bfloat16",)),
    ("conv1d_fused", "large snake+conv k7+res [1, 1024, 32768]", ("bfloat16",)),
]


def snake_main():
    """The launcher's rule (a separate snake pass once the fused snake would repeat > SNAKE_FUSED_MAX_REPEATS times)
    on the tap kernel, against always fusing it there."""
    kernels = {k.name: k for k in load_all_kernels()}
    print(f"{'row':<66} {'dtype':<9} {'fused µs':>9} {'rule µs':>8} {'peer µs':>8} {'err':>8}")
    for name, label, dtypes in SNAKE_ROWS:
        k = kernels[name]
        for dtype in dtypes:
            ours, peer, _ = diag_timing.build_row(k, label, dtype)
            ref = _as_tuple(peer())[0]
            t_peer = time_cuda(peer).median_us
            res = []
            rule = K.SNAKE_FUSED_MAX_REPEATS
            for max_repeats in (math.inf, rule):  # always fused, then the launcher's rule
                K.SNAKE_FUSED_MAX_REPEATS = max_repeats
                out = _as_tuple(ours())[0]
                res.append((time_cuda(ours).median_us, scaled_max_error(out, ref.reshape(out.shape))))
            K.SNAKE_FUSED_MAX_REPEATS = rule
            print(f"{label[:66]:<66} {dtype:<9} {res[0][0]:9.1f} {res[1][0]:8.1f} {t_peer:8.1f} "
                  f"{max(res[0][1], res[1][1]):8.1e}")


def main():
    kernels = {k.name: k for k in load_all_kernels()}
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    print(f"{'row':<66} {'dtype':<9} {'strided µs':>10} {'phase-major µs':>14} {'peer µs':>8} {'err':>8}")
    saved = K.PHASE_MAJOR_CLASSES
    for name, label, dtypes in ROWS:
        k = kernels[name]
        shape = next(s for s in k.bench if s.label == label)
        for dtype in dtypes:
            ours, peer, _ = diag_timing.build_row(k, label, dtype)
            with _peer_precision(k.tolerance_row(shape.params, dtype)):
                ref = _as_tuple(peer())[0]
                t_peer = time_cuda(peer).median_us
                res = []
                for classes in (frozenset(), saved):
                    K.PHASE_MAJOR_CLASSES = classes
                    out = _as_tuple(ours())[0]
                    err = scaled_max_error(out, ref.reshape(out.shape))
                    res.append((time_cuda(ours).median_us, err))
                K.PHASE_MAJOR_CLASSES = saved
            print(f"{label[:66]:<66} {dtype:<9} {res[0][0]:10.1f} {res[1][0]:14.1f} {t_peer:8.1f} "
                  f"{max(res[0][1], res[1][1]):8.1e}")


if __name__ == "__main__":
    import sys
    snake_main() if sys.argv[1:] == ["snake"] else main()
