"""The registry filled: every kernel module imported, so that each registers its kernels (tilewave.spec)."""
from __future__ import annotations

import importlib
import pkgutil

from tilewave.spec import REGISTRY, Registry


def load_all_kernels() -> Registry:
    """Import every module and package of tilewave.kernels (a new family is picked up without editing a list)."""
    import tilewave.kernels as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{mod.name}")
    return REGISTRY
