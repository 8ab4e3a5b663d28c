"""Kernel tests run on CUDA where a GPU is present, else on the CPU through the Triton interpreter.

TRITON_INTERPRET must be set before triton is first imported, which is why it happens here.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

KERNEL_DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
