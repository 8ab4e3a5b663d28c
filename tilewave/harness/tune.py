"""`tilewave tune FAMILY`: time a family's candidate launch configs at the registry's bench shapes, on a GPU.

A candidate is one override of what the family's plan picks by itself: a tile from the family's tables, a
persistent threshold, device or host TMA descriptors (conv); a forward tile, a decode tile, the fused or separate
decode combine, q inside or before the key loop (attention). For every bench shape and dtype of the family's kernels
the sweep times the plan's own pick and each candidate with time_cuda, checks each candidate's output against the
pick's (scaled error within the kernel's tolerance row) and prints the times, fastest first. Where a candidate beats
the pick, the table to change is in the family's plan module; benchmarks/TILE_HISTORY.md says why each is what it is.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

FAMILIES = ("conv", "attention")
_CONV_KERNELS = ("conv1d", "conv1d_transpose", "conv1d_fused")  # the conv1d_fused launcher takes every override


@dataclass(frozen=True)
class Candidate:
    kernel: str  # the registry name whose bench shapes it runs at
    label: str
    options: dict[str, Any] = field(default_factory=dict)  # the launcher's override arguments; {} = the plan's pick


def _classes(dtype: str, precision: str) -> tuple[str, str]:
    from tilewave.kernels.conv import plan as P
    from tilewave.spec import dtype_of

    return P._tap_class(dtype_of(dtype), precision), P._gemm_class(dtype_of(dtype), precision)


def conv_candidates(kernel: str, dtype: str, params: dict) -> list[Candidate]:
    """Every tile of the call's tile classes (tap, interleaved, gather; the gather's trial tiles too), a persistent
    tap kernel, host descriptors."""
    from tilewave.kernels.conv import plan as P

    if kernel not in _CONV_KERNELS:
        return []
    tap_cls, gemm_cls = _classes(dtype, params.get("precision", "ieee"))
    tiles = dict.fromkeys([*P.TAP_CONFIGS.get(tap_cls, ()), *P.INTERLEAVED_CONFIGS.get(tap_cls, ()),
                           *P.GEMM_CONFIGS[gemm_cls], *P.GEMM_TRIAL_CONFIGS.get(gemm_cls, ())])
    out = [Candidate(kernel, f"tile {t.BLOCK_M}x{t.BLOCK_N}x{t.BLOCK_K} {t.num_warps}w {t.num_stages}s", {"tile": t})
           for t in tiles]
    out.append(Candidate(kernel, "persistent tap kernel past 1 tile per SM", {"tap_persistent": dict.fromkeys(
        ("16bit", "tf32", "tf32x3"), 1)}))
    out.append(Candidate(kernel, "host TMA descriptors", {"device_descriptors": False}))
    return out


def _attention_tiles(tables: tuple[dict, ...], form: str) -> list[tuple]:
    tiles = []
    for table in tables:
        cfg = table.get(form)
        tiles += list(cfg.values()) if isinstance(cfg, dict) else [cfg] if cfg else []
    return list(dict.fromkeys(tiles))


def attention_candidates(kernel: str, dtype: str, params: dict) -> list[Candidate]:
    """sdpa_bidirectional: every forward tile of the dot form; sdpa_decode_sink: every decode tile, the fused and
    the separate combine, q in and before the key loop. The other attention kernels have no candidates yet."""
    from tilewave.kernels.attention import plan as P
    from tilewave.precision import tile_class
    from tilewave.spec import dtype_of

    form = tile_class(params.get("precision", "ieee"), dtype_of(dtype))
    if kernel == "sdpa_bidirectional":
        return [Candidate(kernel, f"tile {m}x{n} {w}w {s}s", {"config": (m, n, w, s)})
                for m, n, w, s in _attention_tiles((P._FWD_GPU, P._FWD_GPU_KPM), form)]
    if kernel == "sdpa_decode_sink":
        long = [p.config for p in P._DEC_GPU_LONG.get(form, {}).values()]
        tiles = list(dict.fromkeys(_attention_tiles((P._DEC_GPU,), form) + long))
        return ([Candidate(kernel, f"key block {n} {w}w {s}s", {"config": (n, w, s)}) for n, w, s in tiles]
                + [Candidate(kernel, f"{'fused' if f else 'separate'} combine", {"fused_combine": f})
                   for f in (True, False)]
                + [Candidate(kernel, f"q {'in' if q else 'before'} the key loop", {"q_in_loop": q})
                   for q in (True, False)])
    return []


def _conv_run(kernel: str) -> Callable:
    from tilewave.kernels.conv import conv1d_fused

    def run(inputs: dict, out, options: dict):
        return conv1d_fused(**{"transposed": kernel == "conv1d_transpose", **inputs}, out=out, **options)
    return run


def _attention_run(kernel: str) -> Callable:
    from tilewave.kernels.attention import decode, sdpa

    def run(inputs: dict, out, options: dict):
        i = inputs
        if kernel == "sdpa_bidirectional":
            return sdpa._launch_fwd(i["q"], i["k"], i["v"], i.get("key_padding_mask"), None, None, i.get("scale"),
                                    i["precision"], out, kernel, **options)
        return decode._launch_decode(i["q"], i["k_cache"], i["v_cache"], i["sinks"], i.get("cache_lens"),
                                     i.get("window"), i.get("scale"), i["precision"], None, out, **options)
    return run


_FAMILY = {"conv": (conv_candidates, _conv_run), "attention": (attention_candidates, _attention_run)}


def check_family(family: str) -> str:
    if family not in _FAMILY:
        raise ValueError(f"tilewave tune: no candidates for family {family!r}; tunable families: "
                         f"{', '.join(FAMILIES)}")
    return family


def sweep(family: str, registry, dtypes: list[str] | None = None,
          kernel: str | None = None) -> Iterator[tuple[Any, Any, str, list[Candidate]]]:
    """(kernel, bench shape, dtype, candidates) for each shape the sweep covers: pure, no GPU needed."""
    enumerate_, _ = _FAMILY[check_family(family)]
    kernels = [k for k in registry.select(family) if k.family == family and (kernel is None or k.name == kernel)]
    if kernel is not None and not kernels:
        names = sorted(k.name for k in registry.select(family) if k.family == family)
        raise ValueError(f"tilewave tune: {kernel!r} is not a {family} kernel; choose one of {', '.join(names)}")
    for k in kernels:
        for shape in k.bench:
            for dt in shape.dtypes or k.dtypes:
                if dtypes and dt not in dtypes:
                    continue
                cands = enumerate_(k.name, dt, shape.params)
                if cands:
                    yield k, shape, dt, cands


def _time_candidates(kernel, shape, dtype: str, candidates: list[Candidate], run: Callable, echo) -> None:
    import torch

    from tilewave.spec import dtype_of
    from tilewave.spec.tolerance import scaled_max_error

    from .runner import _as_tuple
    from .timing import time_cuda

    inputs = kernel.make_inputs(shape.params, dtype_of(dtype), "cuda", torch.Generator().manual_seed(0))
    outs = _as_tuple(kernel.alloc_out(inputs))
    out = outs if len(outs) > 1 else outs[0]
    picked = [o.clone() for o in _as_tuple(run(inputs, out, {}))]
    bound = kernel.tolerance(shape.params, dtype)
    rows = [(time_cuda(lambda: run(inputs, out, {})).median_us, "the plan's pick", "")]
    for c in candidates:
        try:
            got = _as_tuple(run(inputs, out, c.options))
            err = max(scaled_max_error(o, r) for o, r in zip(got, picked))
            us = time_cuda(lambda: run(inputs, out, c.options)).median_us
            rows.append((us, c.label, "" if err <= bound else f"  <- differs from the pick: {err:.1e} > {bound:.0e}"))
        except Exception as exc:  # a tile that does not compile or launch for this shape is a result, not a crash
            rows.append((float("inf"), c.label, f"  <- failed: {type(exc).__name__}: {str(exc).splitlines()[0]}"))
    echo(f"{kernel.name}  {shape.label}  {dtype}")
    for us, label, note in sorted(rows, key=lambda r: r[0]):
        echo(f"  {us:10.1f} µs  {label}{note}")


def run_tune(family: str, registry, dtypes: list[str] | None = None, kernel: str | None = None,
             list_only: bool = False, echo=print) -> int:
    import torch

    plan = list(sweep(family, registry, dtypes, kernel))
    if list_only:
        for k, shape, dt, cands in plan:
            echo(f"{k.name}  {shape.label}  {dt}: " + "; ".join(c.label for c in cands))
        return 0
    if not torch.cuda.is_available():
        print("error: tilewave tune times kernels on a GPU, and no CUDA device is visible here "
              "(--list shows the candidates without one)", file=sys.stderr)
        return 2
    _, run_for = _FAMILY[family]
    for k, shape, dt, cands in plan:
        _time_candidates(k, shape, dt, cands, run_for(k.name), echo)
    return 0


def cmd_tune(args) -> int:
    from .catalogue import load_all_kernels

    try:
        return run_tune(args.family, load_all_kernels(), args.dtype, args.kernel, args.list)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def add_parser(subparsers) -> None:
    t = subparsers.add_parser("tune", help="time a kernel family's candidate tiles at the model shapes (GPU)")
    t.add_argument("family", help=f"kernel family: {', '.join(FAMILIES)}")
    t.add_argument("-k", "--kernel", help="one kernel of the family (default: all of them)")
    t.add_argument("--dtype", action="append", choices=["float32", "float16", "bfloat16"])
    t.add_argument("--list", action="store_true", help="list the shapes and candidates, time nothing (no GPU needed)")
    t.set_defaults(run=cmd_tune)
