"""Which design and which tile run a conv call: the tile tables, the choosers, and `plan`, pure shape arithmetic."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import triton

from tilewave.kernels._common import hopper_or_newer
from tilewave.kernels.conv.common import _cdiv, _interpreted
from tilewave.kernels.conv.transpose import interleaved_extra_macs, interleaved_shifts, transpose_phase_plan
from tilewave.precision import dot_input


@dataclass(frozen=True)
class GemmConfig:
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_K: int
    num_warps: int
    num_stages: int


# Tensor-core tiles: 128×128 outputs × 64 (16-bit) or 32 (tf32) reduction per step, 3 cp.async stages
# (64 KiB of shared memory for 16-bit, 96 KiB for tf32); smaller M tiles for narrow layers (22…96
# channels) and for shapes that would leave SMs idle. Exact float32 runs on FMA units: smaller tiles.
GEMM_CONFIGS: dict[str, tuple[GemmConfig, ...]] = {
    "16bit": (GemmConfig(128, 128, 64, 8, 3), GemmConfig(64, 128, 64, 8, 3), GemmConfig(32, 128, 64, 8, 3)),
    "tf32": (GemmConfig(128, 128, 32, 8, 3), GemmConfig(64, 128, 32, 8, 3), GemmConfig(32, 128, 32, 8, 3)),
    # exact float32, stride-1 convs without a fused input activation (from `tilewave tune conv`'s sweep: 128×64 at 4
    # warps beat 64×64 at BigVGAN's and Kokoro's widths; 64×64 at 3 stages for grids that leave SMs idle; 32×128
    # for 22 rows)
    "ieee": (GemmConfig(128, 64, 16, 4, 2), GemmConfig(64, 64, 16, 4, 3), GemmConfig(32, 128, 16, 4, 2)),
}
# exact float32's transposed and strided convs and its fused input activations keep these narrower tiles: the sweep
# did not time the transposed ones, a fused leaky ReLU + transposed conv is far slower on 128×64 at 4 warps, and the
# strided noise conv's launched form spills there (sm_90 build gate; benchmarks/RESULTS.md)
IEEE_NARROW_CONFIGS = (GemmConfig(64, 64, 16, 4, 2), GemmConfig(32, 64, 16, 4, 2))

# Tiles `tilewave tune conv` times beside the tables' (no plan picks them until a measurement moves them into a
# table): the sweep of exact float32's FMA tiles, kept to time the shapes and forms it did not cover.
GEMM_TRIAL_CONFIGS: dict[str, tuple[GemmConfig, ...]] = {
    "ieee": (GemmConfig(64, 128, 16, 4, 2), GemmConfig(128, 64, 16, 4, 2), GemmConfig(64, 128, 16, 8, 2),
             GemmConfig(128, 64, 16, 8, 2), GemmConfig(128, 128, 16, 8, 2), GemmConfig(64, 64, 32, 4, 3),
             GemmConfig(64, 64, 16, 4, 3), GemmConfig(128, 128, 32, 8, 3), GemmConfig(32, 128, 16, 4, 2)),
}

# The tap-major kernel's tiles in order of preference (pick_tap_config): widest first while the SMs stay
# busy; tf32x3's split operands spill on 128×256. Measurements: benchmarks/TILE_HISTORY.md.
TAP_CONFIGS: dict[str, tuple[GemmConfig, ...]] = {
    "16bit": (GemmConfig(128, 256, 64, 8, 3), GemmConfig(128, 128, 64, 8, 4), GemmConfig(64, 128, 64, 4, 4),
              GemmConfig(64, 64, 64, 4, 5)),
    "tf32": (GemmConfig(128, 256, 32, 8, 3), GemmConfig(128, 128, 32, 8, 3), GemmConfig(64, 128, 32, 4, 4)),
    # tf32x3 splits each operand into high and low parts in registers: 128×256 spills, and 64×128 is faster
    # than 128×128 at every model shape (benchmarks/TILE_HISTORY.md)
    "tf32x3": (GemmConfig(64, 128, 32, 4, 4),),
}

# The strides whose transposed conv runs phase-interleaved per tile class: those where it is faster than one
# phase per program (benchmarks/TILE_HISTORY.md); the others keep one phase per program.
INTERLEAVED_STRIDES: dict[str, frozenset[int]] = {"16bit": frozenset({2, 3, 6, 8}), "tf32": frozenset(),
                                                  "tf32x3": frozenset({8})}


# Interleave while the zero weights add at most this many multiply-adds per output (C_in/G · (U'·P/s − U)):
# the interleaved form's wins lie below it, its losses above (benchmarks/TILE_HISTORY.md).
INTERLEAVED_MAX_EXTRA_MACS = 1024

# The interleaved form's tiles in order of preference (pick_interleaved_config); measurements in
# benchmarks/TILE_HISTORY.md.
INTERLEAVED_CONFIGS: dict[str, tuple[GemmConfig, ...]] = {
    "16bit": (GemmConfig(128, 256, 64, 8, 3), GemmConfig(128, 128, 64, 8, 4), GemmConfig(64, 128, 64, 4, 4)),
    "tf32": (GemmConfig(128, 128, 32, 8, 3),),
    "tf32x3": (GemmConfig(64, 64, 32, 4, 4),),
}

# the 128×256 interleaved tile: for reductions (U'·C_in/G) at least this long, on grids of a tile per SM or more
INTERLEAVED_WIDE_MIN_REDUCTION = 1024

# A tap tile is taken when it yields at least this many tiles per SM (else the next, smaller one).
TAP_MIN_TILES_PER_SM = 1 / 3

# An input activation or a residual runs on tiles of at most this many columns: 128×256 spills with them.
TAP_FUSED_MAX_N = 128

DIRECT_CONFIGS = ((16, 128), (2, 1024))  # (BLOCK_C, BLOCK_T): channel-rich and single-channel outputs

_SM_COUNT_DEFAULT = 132  # H100/H200; read from the device when there is one

# A fused input activation runs once per (tap, output-channel tile) that reads the element. Leaky ReLU
# costs ~2 ops, so it is always fused; snake costs ~8 with the SFU sine (kernels._common.sin) and a
# division, so past 3 repeats one separate snake pass (2 bytes moved per element and a launch) is cheaper, on the
# gather kernel and the tap kernel alike (benchmarks/RESULTS.md).
SNAKE_FUSED_MAX_REPEATS = 3


def _gemm_class(dtype: torch.dtype, precision: str) -> str:
    """Tile class: '16bit', 'tf32' (tensor-core float32, tf32 or tf32x3) or 'ieee' (FMA float32)."""
    if dtype != torch.float32:
        return "16bit"
    return "ieee" if precision == "ieee" else "tf32"


def _tap_class(dtype: torch.dtype, precision: str) -> str:
    """Tap-kernel tile class: '16bit', 'tf32' or 'tf32x3'."""
    return "tf32x3" if dtype == torch.float32 and precision == "tf32x3" else _gemm_class(dtype, precision)


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNT_DEFAULT


def pick_tap_config(dtype: torch.dtype, precision: str, C_out_g: int, positions: int, programs: int,
                    fused: bool, sm_count: int = _SM_COUNT_DEFAULT) -> GemmConfig:
    """The first TAP_CONFIGS tile whose grid (phases·B·G = `programs` per (M tile, N tile)) gives the SMs
    TAP_MIN_TILES_PER_SM tiles each, else the smallest; `fused` (input activation or residual) keeps to
    tiles of at most TAP_FUSED_MAX_N columns."""
    configs = [c for c in TAP_CONFIGS[_tap_class(dtype, precision)] if not fused or c.BLOCK_N <= TAP_FUSED_MAX_N]
    for c in configs:
        if _cdiv(C_out_g, c.BLOCK_M) * _cdiv(positions, c.BLOCK_N) * programs >= sm_count * TAP_MIN_TILES_PER_SM:
            return c
    return configs[-1]


def pick_interleaved_config(dtype: torch.dtype, precision: str, reduction: int, rows_g: int, positions: int,
                            programs: int, fused: bool, sm_count: int = _SM_COUNT_DEFAULT) -> GemmConfig:
    """The phase-interleaved tile: INTERLEAVED_CONFIGS in order, a tile wider than TAP_FUSED_MAX_N only for a
    reduction (U'·C_in/G) of INTERLEAVED_WIDE_MIN_REDUCTION or more whose grid gives every SM a tile and never
    fused, the others while the grid gives the SMs TAP_MIN_TILES_PER_SM tiles each; else the smallest."""
    configs = [c for c in INTERLEAVED_CONFIGS[_tap_class(dtype, precision)]
               if not fused or c.BLOCK_N <= TAP_FUSED_MAX_N]
    for c in configs:
        tiles = _cdiv(rows_g, c.BLOCK_M) * _cdiv(positions, c.BLOCK_N) * programs
        if c.BLOCK_N > TAP_FUSED_MAX_N:
            if reduction >= INTERLEAVED_WIDE_MIN_REDUCTION and tiles >= sm_count:
                return c
        elif tiles >= sm_count * TAP_MIN_TILES_PER_SM:
            return c
    return configs[-1]


def gemm_configs(dtype: torch.dtype, precision: str, narrow: bool = False) -> tuple[GemmConfig, ...]:
    """The gather kernel's tiles for a call's class, in order of preference (narrow: a transposed or strided conv)."""
    cls = _gemm_class(dtype, precision)
    return IEEE_NARROW_CONFIGS if cls == "ieee" and narrow else GEMM_CONFIGS[cls]


def pick_gemm_config(dtype: torch.dtype, precision: str, C_out_g: int, programs_per_m_tile: int,
                     sm_count: int = _SM_COUNT_DEFAULT, narrow: bool = False) -> GemmConfig:
    """The smallest M tile covering the group's output channels (capped at the largest), then a smaller
    one while the grid would leave more than half of the SMs idle."""
    configs = gemm_configs(dtype, precision, narrow)
    cfg = configs[0]
    for c in configs:
        if c.BLOCK_M >= C_out_g:
            cfg = c
    while cfg is not configs[-1] and _cdiv(C_out_g, cfg.BLOCK_M) * programs_per_m_tile < sm_count // 2:
        cfg = configs[configs.index(cfg) + 1]
    return cfg


# An activation fused into the input loads keeps its operands in registers beside the accumulator: on the
# largest tile of each class that spills (tilewave build: 44-252 bytes of spill stores on sm_90), so such a
# call runs on a tile of at most this many rows.
FUSED_INPUT_MAX_M = {"16bit": 64, "tf32": 64, "ieee": 32}


def fused_input_config(cfg: GemmConfig, dtype: torch.dtype, precision: str) -> GemmConfig:
    """The tile for a call whose input activation is fused: cfg, or the largest one small enough."""
    cls, configs = _gemm_class(dtype, precision), gemm_configs(dtype, precision, narrow=True)
    if cfg.BLOCK_M > FUSED_INPUT_MAX_M[cls] or cfg not in configs:  # exact float32: the narrow tiles only
        cfg = next(c for c in configs if c.BLOCK_M <= FUSED_INPUT_MAX_M[cls])
    return cfg


def tap_mode(x: torch.Tensor) -> str:
    """How _conv_tap_kernel loads its tiles: 'tma' (tensor descriptors, sm_90+) or 'pointer' (masked
    loads: older GPUs and the CPU interpreter)."""
    if x.is_cuda and not _interpreted() and hopper_or_newer(x.device):
        return "tma"
    return "pointer"


def tap_kernel_fits(x: torch.Tensor, groups: int) -> bool:
    """The tap kernel runs with TMA, or in the CPU interpreter (its pointer form, so that its indexing is
    tested there). TMA boxes start at channel g·C_in/G, which must be 16-byte aligned. GPUs without TMA and
    such groupings keep the gather kernel, which prefetches its 16-bit tiles itself."""
    if not x.is_cuda:
        return True
    return tap_mode(x) == "tma" and (groups == 1 or (x.shape[1] // groups * x.element_size()) % 16 == 0)


def uses_tap_kernel(dtype: torch.dtype, precision: str, transposed: bool, stride: int) -> bool:
    """The tap-major kernel takes tensor-core calls whose taps are contiguous shifts of the input: a
    stride-1 conv or any transposed conv (per phase); exact float32 and strided convs keep the gather."""
    return _gemm_class(dtype, precision) != "ieee" and (transposed or stride == 1)


def uses_interleaved_phases(dtype: torch.dtype, precision: str, C_in_g: int, K: int, stride: int, padding: int,
                            dilation: int) -> bool:
    """Whether a transposed conv on the tap kernel computes all phases of a time tile in one program (contiguous
    stores) rather than one phase per program (stores `stride` elements apart): for the strides where that is
    faster (INTERLEAVED_STRIDES) while the zero weights cost at most INTERLEAVED_MAX_EXTRA_MACS per output."""
    return (stride in INTERLEAVED_STRIDES[_tap_class(dtype, precision)]
            and interleaved_extra_macs(C_in_g, K, stride, padding, dilation) <= INTERLEAVED_MAX_EXTRA_MACS)


# Tile classes whose per-phase transposed conv writes a phase-major scratch, interleaved by
# _interleave_phases_kernel: scattered 2-byte strided stores bound the per-phase kernel (benchmarks/TILE_HISTORY.md).
PHASE_MAJOR_CLASSES = frozenset({"16bit", "tf32", "tf32x3"})

# The tap kernel makes its TMA descriptors on the device (a host descriptor is encoded on the CPU at every
# launch). conv_plan's default.
DEVICE_DESCRIPTORS = True

# Per tile class: tiles per SM past which the tap kernel runs persistent (one program per SM walking the
# tiles; 0 = never); never with an activation or residual, whose epilogue then spills. conv_plan's default.
TAP_PERSISTENT = {"16bit": 4, "tf32": 0, "tf32x3": 0}


@functools.lru_cache(maxsize=1024)
def _tap_geometry(transposed, B, C_out_g, groups, positions, phases, K, stride, padding, dilation, tap_step, base,
                  cfg, persistent, sm_count):
    """(N tiles, tiles, persistent launch (when there are more than `persistent` tiles per SM, 0 = never),
    [lo, hi) input positions the boxes touch over all phases, taps and tiles): shape arithmetic, cached so
    that a model's repeated layers skip it."""
    tiles_n = _cdiv(positions, cfg.BLOCK_N)
    n_tiles = phases * _cdiv(C_out_g, cfg.BLOCK_M) * tiles_n * B * groups
    if transposed:
        plan = transpose_phase_plan(K, stride, padding, dilation)
        bases, U = [0 if e is None else e[1] for e in plan], _cdiv(K, stride // math.gcd(stride, dilation))
    else:
        bases, U = [base], K
    shifts = [b + u * tap_step for b in bases for u in range(U)]
    return (tiles_n, n_tiles, 0 < persistent and n_tiles > persistent * sm_count, min(shifts),
            max(shifts) + tiles_n * cfg.BLOCK_N)


def uses_gemm(C_in_g: int, C_out_g: int, taps: int) -> bool:
    """Tensor-core path when a tile's M and reduction are at least 16 (tl.dot's minimum on the GPU)."""
    return C_out_g >= 16 and C_in_g * taps >= 16


@dataclass(frozen=True)
class ConvPlan:
    """How one call runs: the design ('tap', 'gemm' or 'direct'), its tile and its geometry. Pure shape and
    dtype arithmetic; the launchers (tap.py, gemm.py, direct.py) pack the weight and launch from it."""
    design: str
    transposed: bool
    B: int
    C_in: int
    L_in: int
    C_out: int
    L_out: int
    groups: int
    K: int
    stride: int
    padding: int
    dilation: int
    act: str  # fused into the loads; 'none' where snake runs as its own pass first (separate_snake)
    separate_snake: bool
    has_bias: bool
    has_res: bool
    upcast: bool  # the CPU interpreter cannot multiply bfloat16: its operands are widened there
    dot: str  # tl.dot's input_precision
    cfg: GemmConfig | None = None  # the tensor-core designs' tile
    direct_block: tuple[int, int] = (0, 0)  # the direct design's (BLOCK_C, BLOCK_T)
    # the implicit GEMM: phases of the output, positions per phase, input index = j·in_step + base + u·tap_step
    phases: int = 1
    positions: int = 0
    in_step: int = 1
    tap_step: int = 1
    base: int = 0
    out_step: int = 1
    taps: int = 0
    # the tap design's transposed forms (module doc of tilewave.kernels.conv) and launch geometry
    interleave: bool = False
    phase_major: bool = False
    phase_pad: int = 1
    rows_g: int = 0
    tma: bool = False
    device_descriptors: bool = False
    tiles_n: int = 0
    n_tiles: int = 0
    persistent: bool = False
    pos_lo: int = 0
    pos_hi: int = 0
    grid: tuple[int, ...] = ()

    def flags(self, x: torch.Tensor) -> dict:
        """The constexprs every design takes; FAST_SIN: the SFU sine on the GPU (the interpreter cannot run
        inline PTX)."""
        return dict(ACT=self.act, HAS_BIAS=self.has_bias, HAS_RES=self.has_res, FAST_SIN=x.is_cuda)

    @property
    def C_in_g(self) -> int:
        return self.C_in // self.groups

    @property
    def C_out_g(self) -> int:
        return self.C_out // self.groups


def _gemm_geometry(transposed: bool, interleave: bool, C_out_g: int, L_out: int, K: int, stride: int, padding: int,
                   dilation: int, taps: int) -> dict:
    """phases, positions, steps and base of the implicit GEMM (and rows per group, phase padding, taps)."""
    if interleave:  # one stride-1 conv over the union of the phases' shifts, phase_pad rows per channel
        phase_pad = triton.next_power_of_2(stride)
        base, taps = interleaved_shifts(K, stride, padding, dilation)
        return dict(phases=1, positions=_cdiv(L_out, stride), in_step=1, tap_step=1, base=base, out_step=stride,
                    taps=taps, phase_pad=phase_pad, rows_g=C_out_g * phase_pad)
    if transposed:
        return dict(phases=stride, positions=_cdiv(L_out, stride), in_step=1,
                    tap_step=-(dilation // math.gcd(stride, dilation)), base=0, out_step=stride, taps=taps,
                    phase_pad=1, rows_g=C_out_g)
    return dict(phases=1, positions=L_out, in_step=stride, tap_step=dilation, base=-padding, out_step=1, taps=taps,
                phase_pad=1, rows_g=C_out_g)


def conv_plan(transposed: bool, x: torch.Tensor, C_out: int, L_out: int, K: int, groups: int, stride: int, padding: int,
         dilation: int, act: str, has_bias: bool, has_res: bool, precision: str, *,
         tap_persistent: dict[str, int] | None = None, device_descriptors: bool = DEVICE_DESCRIPTORS,
         tile: GemmConfig | None = None) -> ConvPlan:
    """The design and tiles for a checked call on x [B, C_in, L_in] (read for its shape, dtype and device only).
    tap_persistent: per tile class, the tiles per SM past which the tap kernel runs persistent (TAP_PERSISTENT);
    device_descriptors: the tap kernel makes its TMA descriptors on the device (DEVICE_DESCRIPTORS);
    tile: this tile for a tensor-core design instead of the tables' pick (tilewave tune)."""
    tap_persistent = TAP_PERSISTENT if tap_persistent is None else tap_persistent
    B, C_in, L_in = x.shape
    dtype = x.dtype
    C_in_g, C_out_g = C_in // groups, C_out // groups
    taps = _cdiv(K, stride // math.gcd(stride, dilation)) if transposed else K
    upcast = _interpreted() and dtype == torch.bfloat16
    shape = dict(transposed=transposed, B=B, C_in=C_in, L_in=L_in, C_out=C_out, L_out=L_out, groups=groups, K=K,
                 stride=stride, padding=padding, dilation=dilation, has_bias=has_bias, has_res=has_res, upcast=upcast,
                 dot=dot_input(precision, torch.float32 if upcast else dtype, "ieee"))
    fused = act != "none" or has_res
    if not uses_gemm(C_in_g, C_out_g, taps):
        block = DIRECT_CONFIGS[0] if C_out >= DIRECT_CONFIGS[0][0] else DIRECT_CONFIGS[1]
        snake_apart = act == "snake" and K * C_out_g > SNAKE_FUSED_MAX_REPEATS
        return ConvPlan("direct", **shape, act="none" if snake_apart else act, separate_snake=snake_apart,
                        direct_block=block)
    tap = uses_tap_kernel(dtype, precision, transposed, stride) and tap_kernel_fits(x, groups)
    # a residual keeps the per-phase form: with the interleaved epilogue's whole-tile residual, 128-row tiles spill
    interleave = (tap and transposed and not has_res
                  and uses_interleaved_phases(dtype, precision, C_in_g, K, stride, padding, dilation))
    # per phase without a residual: the phases into a phase-major scratch, then one interleaving pass
    phase_major = (tap and transposed and not interleave and not has_res
                   and _tap_class(dtype, precision) in PHASE_MAJOR_CLASSES)
    g = _gemm_geometry(transposed, interleave, C_out_g, L_out, K, stride, padding, dilation, taps)
    sm_count = _sm_count(x.device)
    if tap:
        if interleave:
            cfg = pick_interleaved_config(dtype, precision, g["taps"] * C_in_g, g["rows_g"], g["positions"],
                                          B * groups, fused, sm_count)
        else:  # a phase-major epilogue (below) spills on 128×256 tiles, as a fused one does
            cfg = pick_tap_config(dtype, precision, C_out_g, g["positions"], B * groups * g["phases"],
                                  fused or phase_major, sm_count)
        fused_cfg = cfg
    else:
        cfg = pick_gemm_config(dtype, precision, C_out_g, _cdiv(g["positions"], 128) * B * groups * g["phases"],
                               sm_count, narrow=transposed or stride != 1)
        fused_cfg = fused_input_config(cfg, dtype, precision) if act != "none" else cfg
    snake_apart = act == "snake" and g["taps"] * _cdiv(g["rows_g"], fused_cfg.BLOCK_M) > SNAKE_FUSED_MAX_REPEATS
    if not snake_apart:
        cfg = fused_cfg
    if tile is not None:
        cfg = tile
    act = "none" if snake_apart else act
    if not tap:
        grid = (g["phases"] * _cdiv(C_out_g, cfg.BLOCK_M) * _cdiv(g["positions"], cfg.BLOCK_N), B * groups)
        return ConvPlan("gemm", **shape, act=act, separate_snake=snake_apart, cfg=cfg, interleave=False,
                        phase_major=False, grid=grid, **g)
    per_phase = transposed and not interleave
    tiles_n, n_tiles, persistent, pos_lo, pos_hi = _tap_geometry(
        per_phase, B, g["rows_g"], groups, g["positions"], g["phases"], g["taps"] if interleave else K, stride,
        padding, dilation, g["tap_step"], g["base"], cfg,
        # never persistent with a fused or phase-major epilogue, nor on the wide interleaved tile (never timed there)
        0 if fused or phase_major or cfg.BLOCK_N > TAP_FUSED_MAX_N and interleave
        else tap_persistent[_tap_class(dtype, precision)],
        sm_count)
    tma = tap_mode(x) == "tma"
    return ConvPlan("tap", **shape, act=act, separate_snake=snake_apart, cfg=cfg, interleave=interleave,
                    phase_major=phase_major, tma=tma, device_descriptors=tma and device_descriptors,
                    tiles_n=tiles_n, n_tiles=n_tiles, persistent=persistent, pos_lo=pos_lo, pos_hi=pos_hi,
                    grid=(min(n_tiles, sm_count) if persistent else n_tiles,), **g)
