"""Arguments several commands share (say, profile, serve, vocode), so that each is spelled and explained once."""
from __future__ import annotations

from tilewave.precision import AUTO as AUTO_DTYPE, DEFAULT as DEFAULT_PRECISION, KOKORO_DTYPES, MODES as PRECISIONS
from tilewave.text.languages import LANGUAGE_CHOICES


def add_device_arg(p) -> None:
    p.add_argument("--device", choices=["cpu", "cuda"], help="where the model runs (default: cuda if present)")


def add_precision_arg(p) -> None:
    p.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION,
                   help="float32 products on a GPU: tf32x3 (default: float32-class error on tensor cores), ieee "
                        "(exact float32 on the FMA units, slower), tf32 (~1e-3 relative, fastest); no effect on a CPU")


def add_kokoro_args(p) -> None:
    """The options of a Kokoro session: language, device, weights, precision, dtype, memory budget."""
    p.add_argument("--lang", choices=LANGUAGE_CHOICES, metavar="LANG",
                   help="en-us, en-gb, es, fr, hi, it, pt-br, ja, zh, or the one-letter codes a b e f h i p j z "
                        "(default: the language of the stock voice named, ef_dora: es; else en-us)")
    add_device_arg(p)
    p.add_argument("--weights", metavar="PATH", help="Kokoro weights (.onnx or .pth; default: the installed int8 ONNX)")
    add_precision_arg(p)
    p.add_argument("--dtype", choices=KOKORO_DTYPES + (AUTO_DTYPE,), default=AUTO_DTYPE,
                   help="storage of the decoder and generator, most of the work: float32 or bfloat16 (tensor cores "
                        "on a GPU; durations unchanged; fidelity in benchmarks/RESULTS.md); auto (default): "
                        "bfloat16 on a CPU with native bfloat16 (AMX or AVX512_BF16), else float32")
    p.add_argument("--memory-budget", metavar="SIZE",
                   help="bound the memory a batch of chunks may take, e.g. 2GB (default: ~100 s of speech a batch)")
