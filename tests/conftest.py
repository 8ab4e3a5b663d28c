"""Kernel tests run on CUDA where a GPU is present, else on the CPU through the Triton interpreter.

TRITON_INTERPRET must be set before triton is first imported, which is why it happens here.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

KERNEL_DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"


def _refuse_non_bool_masks() -> None:
    """Make every interpreter run as strict about masks as Triton 3.9's: it refuses a mask that is not bool
    (3.7 accepts one), and the interpreter turns a scalar bool broadcast into a block (`block & scalar`) into
    int32. With this, a mask only the newest Triton refuses fails here on every Triton version."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder

    def strict(method, mask_at):
        def checked(self, *args, **kwargs):
            mask = args[mask_at]
            if mask is not None and np.asarray(mask.data).dtype != np.bool_:
                raise TypeError(f"a {np.asarray(mask.data).dtype} mask: Triton 3.9's interpreter refuses masks that "
                                "are not bool (write `(... & scalar) != 0` or build the mask from block comparisons)")
            return method(self, *args, **kwargs)
        return checked

    builder.create_masked_load = strict(builder.create_masked_load, 1)
    builder.create_masked_store = strict(builder.create_masked_store, 2)


_refuse_non_bool_masks()
