"""How float32 products meet a GPU's tensor cores (the modes, the engine's default, the one check, the mode in force),
and the storage dtypes a model may run in (their names, the one check).

A mode only changes products of float32 operands (tl.dot in the conv, attention and spectral kernels);
16-bit storage runs on the tensor cores whatever the mode, and accumulation is float32 always.

    'ieee'    exact float32 on the FMA units
    'tf32x3'  each product split into high and low tf32 parts, three tensor-core MMAs: float32-class error
    'tf32'    one tensor-core MMA per product, ~1e-3 relative, fastest

The mode in force is set for a block of work with `scope(mode)` and read by the ops with `current()`; outside any
scope it is exact ('ieee'), so a model or kernel test that sets nothing compares exact float32 with its reference.
The engine runs its models inside `scope(DEFAULT)` unless told otherwise.

A storage dtype (DTYPES: 'float32', 'float16', 'bfloat16') is another thing: what a model's weights and
activations are held in. 16-bit storage multiplies on the tensor cores with float32 accumulation whatever the
mode. BigVGAN takes all three; Kokoro float32 or bfloat16 (KOKORO_DTYPES: its bfloat16 stages, and why the
others stay float32, are in models/kokoro/model.py). A kernel's tolerance row, `spec.Kernel.tolerance_row`, is
a third thing.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import TYPE_CHECKING, Iterator

from tilewave.errors import InputError

if TYPE_CHECKING:  # torch is imported where a dtype is looked at: the command line reads MODES before any model
    import torch

MODES = ("ieee", "tf32x3", "tf32")
# The engine's default for float32 products on a GPU: three TF32 MMAs per product (float32-class error, what
# PyTorch's own float32 SDPA computes): Kokoro's durations stay identical to the official model's and its audio as
# close as the exact path's, BigVGAN's audio stays within the float32 tolerance of the official package, and both
# run faster than on the exact path (benchmarks/RESULTS.md). The models' parity tests run the exact 'ieee' path.
DEFAULT = "tf32x3"
OUTSIDE_SCOPE = "ieee"  # what current() is outside any scope: exact

DTYPES = ("float32", "float16", "bfloat16")  # names of torch dtypes: torch_dtype(name)
KOKORO_DTYPES = ("float32", "bfloat16")  # float16 untried: Kokoro's decoder activations have not been range-checked
AUTO = "auto"  # a dtype name that resolve_dtype turns into one of KOKORO_DTYPES for the device
# CPU flags of native bfloat16 arithmetic: there Kokoro's bfloat16 decoder ran at 0.57-0.61x onnxruntime-int8's time
# and float32 at 0.73-0.95x (benchmarks/RESULTS.md, CPU); without them bfloat16 is emulated (47.6x slower on AVX2)
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")

_in_force: contextvars.ContextVar[str] = contextvars.ContextVar("tilewave_precision", default=OUTSIDE_SCOPE)


def check(mode) -> str:
    """`mode` if it is one of MODES, else an InputError naming it and the choices."""
    if not isinstance(mode, str) or mode not in MODES:
        raise InputError(f"precision {mode!r} is not one of {', '.join(MODES)}: 'ieee' is exact float32, "
                         "'tf32x3' (the default) float32-class error on tensor cores, 'tf32' ~1e-3 relative")
    return mode


def torch_dtype(name: str) -> "torch.dtype":
    """The torch dtype named by one of DTYPES."""
    import torch

    return getattr(torch, name)


def check_dtype(name, choices=DTYPES, what: str = "dtype") -> "torch.dtype":
    """The torch dtype of `name` if it is one of `choices`, else an InputError naming it and the choices."""
    if not isinstance(name, str) or name not in choices:
        raise InputError(f"{what} {name!r} is not one of {', '.join(choices)}")
    return torch_dtype(name)


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo; empty where it cannot be read)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def resolve_dtype(name, device_type: str, flags: set[str] | None = None):
    """`name`, or for AUTO the Kokoro storage dtype for the device: on a CPU bfloat16 where it has native bfloat16
    (NATIVE_BF16_FLAGS), else float32; float32 on a GPU (its bfloat16 is a choice of fidelity, not of speed)."""
    if name != AUTO:
        return name
    if device_type != "cpu":
        return "float32"
    flags = cpu_flags() if flags is None else flags
    return "bfloat16" if any(f in flags for f in NATIVE_BF16_FLAGS) else "float32"


@contextlib.contextmanager
def scope(mode: str) -> Iterator[str]:
    """Run the block with `mode` in force (checked first); the previous mode returns after it."""
    token = _in_force.set(check(mode))
    try:
        yield mode
    finally:
        _in_force.reset(token)


def current() -> str:
    """The mode in force: the innermost scope's, or OUTSIDE_SCOPE ('ieee', exact) outside any scope."""
    return _in_force.get()


@contextlib.contextmanager
def float32_class() -> Iterator[str]:
    """Run the block with float32-class products: the mode in force, except that 'tf32' becomes 'tf32x3'.

    For the stages whose float32 results decide something discrete — Kokoro's durations, integer frame counts
    rounded from a sum of 50 sigmoids: one TF32 product (~1e-3 relative) moves a sum across a .5 and changes
    the utterance's timing (`--precision tf32` changed the durations of a 510-phoneme input:
    benchmarks/RESULTS.md). No mode may change the durations, so those stages never run coarser than
    float32-class; 'ieee' stays exact."""
    with scope(float32_class_mode()) as mode:
        yield mode


def float32_class_mode() -> str:
    """The mode float32_class() runs: the one in force, 'tf32' made 'tf32x3'."""
    return "tf32x3" if current() == "tf32" else current()


def is_float32(dtype: torch.dtype) -> bool:
    import torch

    return dtype == torch.float32


def tile_class(mode: str, dtype: torch.dtype) -> str:
    """A float32 product's mode, or '16bit' for 16-bit operands: what the kernels' tile tables are keyed by."""
    mode = check(mode)
    return mode if is_float32(dtype) else "16bit"


def dot_input(mode: str, dtype: torch.dtype, sixteen_bit: str) -> str:
    """tl.dot's input_precision for operands of `dtype`: the mode for float32; for 16-bit operands the value each
    family's compiled forms were recorded with (`sixteen_bit`; a constexpr, so it names the form in launches.json)."""
    mode = check(mode)
    return mode if is_float32(dtype) else sixteen_bit
