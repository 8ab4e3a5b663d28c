"""What a kernel declares (Case, BenchShape, AotVariant, Kernel), the registry, and the one tolerance table.

Below the kernels: tilewave.kernels.* import this to register themselves; the tools that read the registry
(runner, bench, build, launches, tune) are tilewave.harness, above the kernels.
"""
from tilewave.spec.kernel import REGISTRY, AotVariant, BenchShape, Case, Kernel, Registry, Tensors, dtype_of, register
from tilewave.spec.tolerance import TOLERANCE, dtype_name, scaled_max_error, tolerance

__all__ = ["REGISTRY", "TOLERANCE", "AotVariant", "BenchShape", "Case", "Kernel", "Registry", "Tensors", "dtype_name",
           "dtype_of", "register", "scaled_max_error", "tolerance"]
