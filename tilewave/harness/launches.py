"""What the runtime launches at the registry's model shapes, for the AOT gate (harness/build.py).

Triton specialises a launch on its argument values: an integer that is a multiple of 16 compiles with that
divisibility known, one equal to 1 becomes the constant 1, a pointer 16-byte aligned compiles with vector
accesses. The compiled kernel can differ a lot from the unspecialised form (the decode split kernel's K/V loads
are only pipelined through cp.async when its strides are known multiples of 16), so the gate compiles each
variant as the launches at the model shapes specialise it. Those launches are recorded on a GPU machine, where
every launcher takes its GPU path, by running each registry kernel once per benchmark shape and dtype with
Triton's launch replaced by a recorder (nothing is compiled or run), into `launches.json`:

    python -m tilewave.harness.launches            (on a machine with a CUDA GPU; rewrites launches.json)

The gate falls back to a variant's declared form (`AotVariant.aligned_ints`) where no recorded launch matches.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilewave.spec import AotVariant, Registry

MANIFEST = Path(__file__).with_name("launches.json")
_RUN_DEFAULTS = {"num_warps": 4, "num_stages": 3}  # Triton's NVIDIA defaults when a launch names neither


@dataclass(frozen=True)
class LaunchSpec:
    """One specialisation of a kernel's non-constexpr arguments: integers that are multiples of 16, arguments
    the runtime turned into constants (an integer equal to 1, a None), pointers that are not 16-byte aligned."""
    aligned_ints: tuple[str, ...] = ()
    consts: tuple[tuple[str, Any], ...] = ()
    unaligned_ptrs: tuple[str, ...] = ()

    def label(self) -> str:
        parts = []
        if self.aligned_ints:
            parts.append("16|" + ",".join(self.aligned_ints))
        if self.consts:
            parts.append(",".join(f"{k}={v}" for k, v in self.consts))
        if self.unaligned_ptrs:
            parts.append("unaligned " + ",".join(self.unaligned_ptrs))
        return " ".join(parts) or "unspecialised"


def _key(value: Any) -> str:
    # constexpr values compared by repr: ints, bools, floats and strings as Python writes them
    return repr(value)


def launch_record(fn, args: tuple, kwargs: dict) -> dict:
    """The specialisation Triton's runtime gives this call of jit function `fn` (positional `args`, keyword
    `kwargs` with its constexprs and launch options), as a JSON-able record."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    names = [p.name for p in fn.params]
    bound = dict(zip(names, args))
    bound.update({k: v for k, v in kwargs.items() if k in names})
    constexprs, signature, ints, consts, unaligned = {}, {}, [], [], []
    for p in fn.params:
        value = bound[p.name] if p.name in bound else p._param.default
        if p.is_constexpr:
            constexprs[p.name] = _key(value)
            continue
        ty, key = native_specialize_impl(BaseBackend, value, False, not p.do_not_specialize,
                                         not p.do_not_specialize_on_alignment)
        if ty == "constexpr":
            consts.append([p.name, key])
            continue
        signature[p.name] = ty
        if ty.startswith("*"):
            if key != "D":
                unaligned.append(p.name)
        elif key == "D":  # an integer that is a multiple of 16
            ints.append(p.name)
    options = {k: kwargs.get(k, d) for k, d in _RUN_DEFAULTS.items()}
    return {"kernel": f"{fn.fn.__module__}.{fn.fn.__qualname__}", "constexprs": constexprs, **options,
            "signature": signature, "aligned_ints": ints, "consts": consts, "unaligned_ptrs": unaligned}


@contextmanager
def recording(records: list[dict]):
    """Within: every Triton launch appends its launch_record to `records` and compiles and runs nothing."""
    from triton.runtime.jit import JITFunction

    original = JITFunction.run

    def record(self, *args, grid, warmup, **kwargs):
        records.append(launch_record(self, args, kwargs))

    JITFunction.run = record
    try:
        yield
    finally:
        JITFunction.run = original


def record_launches(registry: Registry, pattern: str | None = None, echo=print) -> dict:
    """Run every registry kernel once per benchmark shape and dtype on the GPU, launches recorded only."""
    import torch
    import triton

    from .bench import _as_tuple
    from tilewave.spec import dtype_of

    entries: dict[str, dict] = {}
    failed = []
    for k in registry.select(pattern):
        for shape in k.bench:
            for dtype in shape.dtypes or k.dtypes:
                where = f"{k.name} / {shape.label} / {dtype}"
                records: list[dict] = []
                try:
                    inputs = k.make_inputs(shape.params, dtype_of(dtype), "cuda", torch.Generator().manual_seed(0))
                    outs = _as_tuple(k.alloc_out(inputs))
                    with recording(records):
                        k.launch(**inputs, out=outs if len(outs) > 1 else outs[0])
                except Exception as exc:  # noqa: BLE001 - reported; a launcher that reads back results
                    failed.append(f"{where}: {type(exc).__name__}: {exc}")
                for r in records:
                    entries.setdefault(json.dumps(r, sort_keys=True), {**r, "seen_at": []})["seen_at"].append(where)
                echo(f"{where}: {len(records)} launches")
                torch.cuda.empty_cache()
    major, minor = torch.cuda.get_device_capability()
    return {"gpu": torch.cuda.get_device_name(), "arch": 10 * major + minor, "torch": torch.__version__,
            "triton": triton.__version__, "failed": failed, "launches": sorted(entries.values(), key=lambda e: (e["kernel"], e["seen_at"][0]))}


def load_manifest(path: Path = MANIFEST) -> tuple[list[dict], int | None]:
    """(the recorded launches, the compute capability they were recorded on as 90 for sm_90)."""
    if not path.exists():
        return [], None
    manifest = json.loads(path.read_text())
    return manifest["launches"], manifest.get("arch")


def _matches(v: AotVariant, entry: dict) -> bool:
    # the same kernel, options, constexprs and pointer element types (a dtype is not a constexpr)
    return (entry["kernel"] == f"{v.fn.fn.__module__}.{v.fn.fn.__qualname__}"
            and entry["num_warps"] == v.num_warps and entry["num_stages"] == v.num_stages
            and all(entry["constexprs"].get(k) == _key(val) for k, val in v.constexprs.items())
            and all(entry["signature"].get(n, t) == t for n, t in v.signature.items() if t.startswith("*")))


def unspecialised(fn) -> tuple[set[str], set[str]]:
    """What jit function `fn` asks the runtime not to specialise: (do_not_specialize arguments: integers never
    taken as multiples of 16 nor a 1 made a constant; do_not_specialize_on_alignment ones: pointers never
    assumed 16-byte aligned)."""
    params = getattr(fn, "params", ())
    return ({p.name for p in params if p.do_not_specialize}, {p.name for p in params if p.do_not_specialize_on_alignment})


def specs_for(v: AotVariant, launches: list[dict]) -> list[LaunchSpec]:
    """The distinct specialisations the recorded launches give variant v (none: not launched at the shapes), as
    the kernel's arguments are specialised now (a launch recorded before it unspecialised one counts without it)."""
    plain, free = unspecialised(v.fn)
    free_ptrs = {n for n, kind in v.signature.items() if kind.startswith("*") and n in free}
    specs = {LaunchSpec(tuple(sorted(n for n in e["aligned_ints"] if n in v.signature and n not in plain)),
                        tuple(sorted((n, c) for n, c in e["consts"] if n in v.signature and n not in plain)),
                        tuple(sorted({n for n in e["unaligned_ptrs"] if n in v.signature} | free_ptrs)))
             for e in launches if _matches(v, e)}
    return sorted(specs, key=LaunchSpec.label)


def _arg_names(fn) -> set[str]:
    # the jit function's Python arguments (its .fn: the same under the interpreter and compiled)
    return set(inspect.signature(getattr(fn, "fn", fn)).parameters)


def undeclared_launches(variants: list[AotVariant], launches: list[dict]) -> list[tuple[AotVariant, LaunchSpec]]:
    """Recorded launches no declared variant matches (a constexpr combination the variants miss), as variants
    of their own with their specialisation; each takes expect_mma from the declared variant of the same kernel
    closest to it (fewest differing constexprs)."""
    out = []
    for e in launches:
        if any(_matches(v, e) for v in variants):
            continue
        module, _, qualname = e["kernel"].rpartition(".")
        fn = getattr(importlib.import_module(module), qualname)
        if set(e["signature"]) | set(e["constexprs"]) | {n for n, _ in e["consts"]} != _arg_names(fn):
            raise ValueError(f"{MANIFEST.name} is stale: {e['kernel']}'s arguments changed since its launches were "
                             "recorded; record them again (python -m tilewave.harness.launches on a GPU machine)")
        same = [v for v in variants if v.fn is fn]
        closest = min(same, key=lambda v: sum(e["constexprs"].get(k) != _key(x) for k, x in v.constexprs.items()),
                      default=None)
        v = AotVariant(f"{qualname}[undeclared, launched by {e.get('seen_at', ['a recorded launch'])[0]}]", fn,
                       dict(e["signature"]),
                       {k: ast.literal_eval(x) for k, x in e["constexprs"].items()}, e["num_warps"],
                       e["num_stages"], expect_mma=closest is not None and closest.expect_mma)
        out.append((v, LaunchSpec(tuple(e["aligned_ints"]), tuple((n, c) for n, c in e["consts"]),
                                  tuple(e["unaligned_ptrs"]))))
    return out


def main(argv: list[str] | None = None) -> int:
    from tilewave.harness.catalogue import load_all_kernels

    if (sys.argv[1:] if argv is None else argv):
        raise SystemExit("usage: python -m tilewave.harness.launches   (records every registry kernel)")
    manifest = record_launches(load_all_kernels())
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"{len(manifest['launches'])} distinct launches written to {MANIFEST}; {len(manifest['failed'])} failed")
    for f in manifest["failed"]:
        print("  failed:", f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
