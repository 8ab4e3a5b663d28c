"""Registration of the attention kernels: tests (small shapes on the interpreter, model shapes on the GPU), benches,
AOT variants."""
from __future__ import annotations

import torch

from tilewave.kernels._common import randn
from tilewave.kernels.attention.common import GPU_HEAD_BLOCKS, _pick
from tilewave.kernels.attention.decode import _decode_combine_kernel, _decode_split_kernel, sdpa_decode_sink
from tilewave.kernels.attention.plan import (COMBINE_BLOCK_S, COMBINE_WARPS, DECODE_BLOCK_G, _DEC_GPU, _DEC_GPU_LONG,
                                             _DEC_MERGE, _DEC_Q_IN_LOOP, _DEC_SHORT_SEPARATE, _FWD_GPU, _FWD_GPU_KPM,
                                             _REL_GPU, _REL_SPLIT_D_FORMS, _merge_constexprs)
from tilewave.kernels.attention.sdpa import (_sdpa_fwd_kernel, _sdpa_rel_pos_kernel, sdpa_bidirectional,
                                             sdpa_bidirectional_windowed, sdpa_rel_pos_conformer)
from tilewave.reference.attention import (sdpa_bidirectional_torch, sdpa_bidirectional_windowed_torch,
                                         sdpa_decode_sink_oracle, sdpa_decode_sink_torch, sdpa_oracle,
                                         sdpa_rel_pos_conformer_torch, sdpa_rel_pos_oracle, sdpa_windowed_oracle,
                                         segments_from_lengths)
from tilewave.spec import AotVariant, BenchShape, Case, Kernel, register


def _qkv(p, dtype, device, gen, H_kv=None):
    B, H, D = p["B"], p["H"], p["D"]
    Tq, Tk = p.get("Tq", p.get("T")), p.get("Tk", p.get("T"))
    H_kv = H if H_kv is None else H_kv
    # q scaled by 1.5: peakier softmax rows than unit-variance scores give, closer to trained attention.
    return {"q": randn((B, H, Tq, D), dtype, device, gen, scale=1.5), "k": randn((B, H_kv, Tk, D), dtype, device, gen),
            "v": randn((B, H_kv, Tk, D), dtype, device, gen)}


def _precision(p):
    return {"precision": p.get("precision", "ieee")}


def _sdpa_inputs(p, dtype, device, gen):
    inputs = _qkv(p, dtype, device, gen)
    Tk = inputs["k"].shape[2]
    if "lengths" in p:  # ragged batch: keys [0, length) of each sequence, the rest padding
        inputs["key_padding_mask"] = (torch.arange(Tk)[None, :] < torch.tensor(p["lengths"])[:, None]).to(device)
    elif p.get("holes"):  # padding anywhere, not only at the end
        inputs["key_padding_mask"] = (torch.rand((p["B"], Tk), generator=gen) > 0.4).to(device)
    return {**inputs, **_precision(p)}


def ragged_windows(T: int, full: int, seed: int) -> tuple[int, ...]:
    """Window lengths summing to T: mostly `full`, with the short edge windows an image grid leaves."""
    gen = torch.Generator().manual_seed(seed)
    out, left = [], T
    while left:
        n = full if torch.rand((), generator=gen) < 0.6 else int(torch.randint(1, full, (), generator=gen))
        out.append(min(n, left))
        left -= out[-1]
    return tuple(out)


def _windowed_inputs(p, dtype, device, gen):
    seg_start, seg_len = segments_from_lengths(p["windows"], device)
    return {**_qkv({**p, "T": sum(p["windows"])}, dtype, device, gen), "seg_start": seg_start, "seg_len": seg_len,
            **_precision(p)}


def _rel_pos_inputs(p, dtype, device, gen):
    H, D, T = p["H"], p["D"], p["T"]
    inputs = _qkv(p, dtype, device, gen, H_kv=p["H_kv"])
    rel_len, rel_zero = p.get("rel_len", 2 * T - 1), p.get("rel_zero", T - 1)
    inputs["rel_emb"] = randn((rel_len, H, D), dtype, device, gen)
    bias_scale = 0.0 if p.get("zero_bias") else 0.5
    inputs["pos_bias_u"] = randn((H, D), dtype, device, gen, scale=bias_scale)
    inputs["pos_bias_v"] = randn((H, D), dtype, device, gen, scale=bias_scale)
    inputs["rel_zero"] = rel_zero
    return {**inputs, **_precision(p)}


def _decode_inputs(p, dtype, device, gen):
    B, H, H_kv, T, D = p["B"], p["H"], p["H_kv"], p["T"], p["D"]
    inputs = {"q": randn((B, H, D), dtype, device, gen, scale=1.5), "k_cache": randn((B, H_kv, T, D), dtype, device, gen),
              "v_cache": randn((B, H_kv, T, D), dtype, device, gen),
              "sinks": randn((H,), torch.float32, device, gen, scale=2.0), "window": p.get("window")}
    if "lens" in p:
        inputs["cache_lens"] = torch.tensor(p["lens"], dtype=torch.int32, device=device)
    return {**inputs, **_precision(p)}


_CPU = ("cpu", "cuda")

_GPU = ("cuda",)

_INTERPRETABLE = ("float32", "float16")  # bf16 tl.dot gives garbage in the interpreter; bf16 runs on the GPU

_TF32 = {"precision": "tf32"}

_TF32X3 = {"precision": "tf32x3"}

_FP32 = ("float32",)


def _bench_rows(label: str, params: dict, flops, nbytes) -> list[BenchShape]:
    """A shape in 16-bit, and in float32 at both exact precisions, each row labelled with its precision:
    tf32x3 is what PyTorch's float32 SDPA (memory-efficient CUTLASS kernel, 3xTF32 on sm_80+) computes."""
    return [BenchShape(label, params, flops, nbytes, dtypes=("float16", "bfloat16")),
            BenchShape(f"{label}, fp32 tf32x3", {**params, **_TF32X3}, flops, nbytes, dtypes=_FP32),
            BenchShape(f"{label}, fp32 ieee", params, flops, nbytes, dtypes=_FP32)]


def _attention_bytes(p, itemsize, Tq=None, Tk=None):
    """q and o once, k and v once: B·H·(2·Tq + 2·Tk·H_kv/H)·D elements."""
    Tq = Tq or p.get("Tq", p.get("T"))
    Tk = Tk or p.get("Tk", p.get("T"))
    H_kv = p.get("H_kv", p["H"])
    return itemsize * p["B"] * p["D"] * (2 * p["H"] * Tq + 2 * H_kv * Tk)


def _full_flops(p):
    return 4 * p["B"] * p["H"] * p.get("Tq", p.get("T")) * p.get("Tk", p.get("T")) * p["D"]


# Variant helpers: one compiled form per storage dtype and float32 precision ('ieee' runs on FMA units,
# so only the 16-bit and tf32 forms must use the tensor cores).
_DOT_FORMS = (("fp32", "ieee", False), ("fp32", "tf32x3", True), ("fp32", "tf32", True), ("fp16", "tf32", True),
              ("bf16", "tf32", True))


# Integer arguments that are multiples of 16 at every attention model shape (head dims 64, 80, 128): the strides
# of [.., D]-contiguous q/k/v/out/rel_emb rows, D, and the decode chunk (a multiple of its key block). The runtime
# specialises them, and the build gate compiles that form (AotVariant.aligned_ints); sequence lengths vary.
_ALIGNED_INTS = ("sqb", "sqh", "sqt", "skb", "skh", "skt", "svb", "svh", "svt", "sob", "soh", "sot", "srr", "srh",
                 "D", "chunk")


def _aligned_ints(fn) -> tuple[str, ...]:
    return tuple(prm.name for prm in fn.params if prm.name in _ALIGNED_INTS)


def _signature(fn, dt: str, pointer_types: dict[str, str], floats=("qk_scale",)) -> dict[str, str]:
    sig = {}
    for prm in fn.params:
        if prm.is_constexpr:
            continue
        if prm.name.endswith("_ptr"):
            sig[prm.name] = pointer_types.get(prm.name, f"*{dt}")
        else:
            sig[prm.name] = "fp32" if prm.name in floats else "i32"
    return sig


def _dot_variants(fn, tables: tuple[dict, ...], tile_names: tuple[str, ...], modes: list[dict],
                  pointer_types: dict[str, str], per_head_block=lambda BLOCK_D: {}, per_form=lambda form: {}):
    """Every (dot form, tile config, mode, head block) of a tl.dot kernel: each config of `tables` the
    launcher can pick for the form."""
    out = []
    for dt, prec, mma in _DOT_FORMS:
        form = prec if dt == "fp32" else "16bit"
        for BLOCK_D in GPU_HEAD_BLOCKS:
            for cfg in dict.fromkeys(_pick(t, form, BLOCK_D) for t in tables if form in t):
                *tiles, warps, stages = cfg
                for mode in modes:
                    tag = ",".join([dt, prec, *map(str, cfg), *(f"{k}={v}" for k, v in mode.items()), f"D={BLOCK_D}"])
                    constexprs = {**dict(zip(tile_names, tiles)), **mode, "BLOCK_D": BLOCK_D, "PRECISION": prec,
                                  **per_head_block(BLOCK_D), **per_form(form)}
                    out.append(AotVariant(f"{fn.__name__}[{tag}]", fn, _signature(fn, dt, pointer_types),
                                          constexprs, num_warps=warps, num_stages=stages, expect_mma=mma,
                                          aligned_ints=_aligned_ints(fn)))
    return out


def _fwd_variants(modes):
    pointers = {"kpm_ptr": "*u8", "seg_start_ptr": "*i32", "seg_len_ptr": "*i32"}
    unmasked = [{"HAS_KPM": False, "WINDOWED": False, "EVEN_K": even} for even in (False, True)]
    out = []
    for kpm, win in modes:
        if kpm or win:
            tables = ({**_FWD_GPU, **_FWD_GPU_KPM},) if kpm else (_FWD_GPU,)
            out += _dot_variants(_sdpa_fwd_kernel, tables, ("BLOCK_M", "BLOCK_N"),
                                 [{"HAS_KPM": kpm, "WINDOWED": win, "EVEN_K": False}], pointers)
    if (False, False) in modes:
        out += _dot_variants(_sdpa_fwd_kernel, (_FWD_GPU,), ("BLOCK_M", "BLOCK_N"), unmasked, pointers)
    return out


def _rel_pos_variants():
    return _dot_variants(_sdpa_rel_pos_kernel, (_REL_GPU,), ("BLOCK",), [{}], {},
                         per_form=lambda form: {"SPLIT_D": form in _REL_SPLIT_D_FORMS})


_PARTIALS = {"part_ptr": "*fp32", "sink_ptr": "*fp32"}


def _decode_variants():
    def split_variants(tables, fused, plan_of=lambda BLOCK_D: None):
        # plan_of: the _DEC_GPU_LONG plan a head block's variant follows (its merge), None: the default merge;
        # q in the loop follows the form (_DEC_GPU_LONG's entries agree with _DEC_Q_IN_LOOP)
        def per_head_block(BLOCK_D):
            plan = plan_of(BLOCK_D)
            return _merge_constexprs(BLOCK_D, plan.merge if plan else _DEC_MERGE)
        return _dot_variants(_decode_split_kernel, tables, ("BLOCK_N",),
                             [{"HAS_LENS": lens, "FUSED_COMBINE": fused, "BLOCK_G": DECODE_BLOCK_G, "PDL": not fused}
                              for lens in (False, True)],
                             {"lens_ptr": "*i32", "counter_ptr": "*i32", **_PARTIALS}, per_head_block=per_head_block,
                             per_form=lambda form: {"Q_IN_LOOP": _DEC_Q_IN_LOOP[form]})

    # short caches: _DEC_GPU fused, or separate for _DEC_SHORT_SEPARATE forms; long ones: a _DEC_GPU_LONG entry,
    # else _DEC_GPU with the separate combine
    separate = {form: cfg for form, cfg in _DEC_GPU.items()
                if form in _DEC_SHORT_SEPARATE or any(bd not in _DEC_GPU_LONG.get(form, {}) for bd in GPU_HEAD_BLOCKS)}
    out = split_variants((_DEC_GPU,), True) + split_variants((separate,), False)
    for form, by_block in _DEC_GPU_LONG.items():
        for fused in (True, False):
            picked = {bd: plan for bd, plan in by_block.items() if plan.fused == fused}
            if picked:  # head blocks without an entry of this kind repeat the _DEC_GPU config (deduplicated)
                table = {form: {bd: picked[bd].config if bd in picked else _pick(_DEC_GPU, form, bd)
                                for bd in GPU_HEAD_BLOCKS}}
                out += split_variants((table,), fused, picked.get)
    out = list({(v.name, tuple(sorted(v.constexprs.items()))): v for v in out}.values())
    for dt in ("fp32", "fp16", "bf16"):
        for BLOCK_D in GPU_HEAD_BLOCKS:
            out.append(AotVariant(
                f"_decode_combine_kernel[{dt},D={BLOCK_D}]", _decode_combine_kernel,
                _signature(_decode_combine_kernel, dt, _PARTIALS),
                {"BLOCK_S": COMBINE_BLOCK_S, "BLOCK_D": BLOCK_D, "PDL": True}, num_warps=COMBINE_WARPS,
                aligned_ints=_aligned_ints(_decode_combine_kernel)))
    return out


register(Kernel(
    name="sdpa_bidirectional", family="attention", used_by=("kokoro",),
    doc="o = softmax(scale q k^T, keys with key_padding_mask False excluded) v; a row with no key outputs 0",
    make_inputs=_sdpa_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_bidirectional,
    oracle=sdpa_oracle, peer=sdpa_bidirectional_torch,
    cases=[
        Case({"B": 2, "H": 2, "T": 37, "D": 16}, _CPU, _INTERPRETABLE),
        Case({"B": 3, "H": 1, "T": 45, "D": 32, "lengths": (45, 29, 1)}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 2, "Tq": 20, "Tk": 64, "D": 64, "holes": True}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 1, "T": 33, "D": 32, "lengths": (33, 17), **_TF32}, _CPU, ("float32",)),
        Case({"B": 1, "H": 2, "T": 35, "D": 16, "lengths": (30,), **_TF32X3}, _CPU, _FP32),
        Case({"B": 1, "H": 1, "T": 32, "D": 16, **_TF32X3}, _CPU, _FP32),  # EVEN_K: keys a whole number of blocks
        # a SigLIP-style vision encoder: 576 tokens (24 x 24 patches), 16 heads x 64.
        Case({"B": 1, "H": 16, "T": 576, "D": 64}, _GPU),
        # ALBERT (Kokoro's PL-BERT): 12 heads x 64, up to 512 tokens, a ragged batch of utterances.
        Case({"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19)}, _GPU),
        Case({"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19), **_TF32}, _GPU, ("float32",)),
        Case({"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19), **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 16, "T": 576, "D": 64, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 4, "T": 1024, "D": 128, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 3, "Tq": 300, "Tk": 999, "D": 128, "holes": True, **_TF32X3}, _GPU, _FP32),
        # many programs at head dim 128, keys a whole number of blocks or not
        Case({"B": 4, "H": 33, "T": 256, "D": 128}, _GPU, ("float16", "bfloat16")),
        Case({"B": 2, "H": 85, "T": 200, "D": 128}, _GPU, ("float16", "bfloat16")),
        Case({"B": 2, "H": 3, "Tq": 200, "Tk": 333, "D": 48, "holes": True}, _GPU),
    ],
    bench=[
        *_bench_rows("ALBERT 512 tokens [1, 12, 512, 64]", {"B": 1, "H": 12, "T": 512, "D": 64},
                     _full_flops, _attention_bytes),
        *_bench_rows("ALBERT ragged batch [4, 12, 512, 64] with key padding",
                     {"B": 4, "H": 12, "T": 512, "D": 64, "lengths": (512, 377, 130, 19)},
                     _full_flops, _attention_bytes),
        *_bench_rows("SigLIP 576 tokens [1, 16, 576, 64]", {"B": 1, "H": 16, "T": 576, "D": 64},
                     _full_flops, _attention_bytes),
        *_bench_rows("large [4, 16, 4096, 128]", {"B": 4, "H": 16, "T": 4096, "D": 128},
                     _full_flops, _attention_bytes),
    ],
    tol_kind="reduction", variants=lambda: _fwd_variants(((False, False), (True, False))),
))


def _windowed_flops(p):
    return 4 * p["B"] * p["H"] * p["D"] * sum(n * n for n in p["windows"])


def _windowed_bytes(p, itemsize):
    return _attention_bytes(p, itemsize, sum(p["windows"]), sum(p["windows"]))


_QWEN_WINDOWS = ragged_windows(1000, 64, seed=7)  # a Qwen2.5-VL image after window reordering, 64-token windows


register(Kernel(
    name="sdpa_bidirectional_windowed", family="attention", used_by=(),
    doc="o_i = softmax over keys j in [seg_start_i, seg_start_i + seg_len_i) of scale q_i k_j, times v",
    make_inputs=_windowed_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_bidirectional_windowed,
    oracle=sdpa_windowed_oracle, peer=sdpa_bidirectional_windowed_torch,
    cases=[
        Case({"B": 1, "H": 2, "D": 16, "windows": (16, 9, 20, 5)}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 1, "D": 32, "windows": (7, 33, 1, 23)}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 1, "D": 64, "windows": (3, 40, 21), **_TF32}, _CPU, ("float32",)),
        *[Case({"B": 1, "H": 16, "D": D, "windows": _QWEN_WINDOWS}, _GPU) for D in (64, 80, 128)],
        Case({"B": 2, "H": 4, "D": 80, "windows": ragged_windows(777, 100, seed=3)}, _GPU),
        Case({"B": 1, "H": 16, "D": 80, "windows": _QWEN_WINDOWS, **_TF32}, _GPU, ("float32",)),
        Case({"B": 1, "H": 16, "D": 80, "windows": _QWEN_WINDOWS, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 2, "D": 32, "windows": (5, 30, 12), **_TF32X3}, _CPU, _FP32),
    ],
    bench=[
        *_bench_rows("Qwen2.5-VL 1000 tokens in 64-token windows, 16 x 80",
                     {"B": 1, "H": 16, "D": 80, "windows": _QWEN_WINDOWS}, _windowed_flops, _windowed_bytes),
        *_bench_rows("large: 16384 tokens in 64-token windows, 16 x 80",
                     {"B": 1, "H": 16, "D": 80, "windows": (64,) * 256}, _windowed_flops, _windowed_bytes),
    ],
    tol_kind="reduction", variants=lambda: _fwd_variants(((False, True),)),
))


def _rel_pos_flops(p):
    return _full_flops(p) * 3 // 2


def _rel_pos_bytes(p, itemsize):
    return _attention_bytes(p, itemsize) + itemsize * p.get("rel_len", 2 * p["T"] - 1) * p["H"] * p["D"]


register(Kernel(
    name="sdpa_rel_pos_conformer", family="attention", used_by=(),
    doc="o = softmax_j(scale((q_i + u_h) k_j + (q_i + v_h) rel_emb[clamp(j + rel_zero - i, 0, rel_len - 1), h])) v",
    make_inputs=_rel_pos_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_rel_pos_conformer,
    oracle=sdpa_rel_pos_oracle, peer=sdpa_rel_pos_conformer_torch,
    cases=[
        Case({"B": 1, "H": 2, "H_kv": 1, "T": 37, "D": 16}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 4, "H_kv": 2, "T": 50, "D": 32, "rel_len": 21, "rel_zero": 10, "zero_bias": True},
             _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 1, "H_kv": 1, "T": 29, "D": 64, "rel_len": 64, "rel_zero": 40, **_TF32}, _CPU, ("float32",)),
        # Conformer encoders (e.g. 30 s of 50 Hz frames): 1,500 frames, 8 heads x 128, GQA 8 -> 2.
        Case({"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128}, _GPU),
        Case({"B": 2, "H": 8, "H_kv": 8, "T": 333, "D": 64, "rel_len": 129, "rel_zero": 64, "zero_bias": True}, _GPU),
        Case({"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128, **_TF32}, _GPU, ("float32",)),
        Case({"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 4, "H_kv": 4, "T": 200, "D": 64, **_TF32X3}, _GPU, _FP32),
        Case({"B": 1, "H": 2, "H_kv": 1, "T": 21, "D": 32, **_TF32X3}, _CPU, _FP32),
    ],
    bench=[
        *_bench_rows("conformer 1500 frames, 8 x 128, GQA 8/2", {"B": 1, "H": 8, "H_kv": 2, "T": 1500, "D": 128},
                     _rel_pos_flops, _rel_pos_bytes),
        *_bench_rows("large: 4 x 4000 frames, 8 x 128, GQA 8/2", {"B": 4, "H": 8, "H_kv": 2, "T": 4000, "D": 128},
                     _rel_pos_flops, _rel_pos_bytes),
    ],
    tol_kind="reduction", variants=_rel_pos_variants,
))


def _decode_keys(p):
    return min(p["T"], p.get("window") or p["T"])


def _decode_flops(p):
    return 4 * p["B"] * p["H"] * _decode_keys(p) * p["D"]


def _decode_bytes(p, itemsize):
    return itemsize * p["B"] * p["D"] * (2 * p["H_kv"] * _decode_keys(p) + 2 * p["H"])


_DECODE_MODEL = {"B": 1, "H": 64, "H_kv": 8}  # 64 query heads over 8 KV heads


register(Kernel(
    name="sdpa_decode_sink", family="attention", used_by=(),
    doc="one query per head over the KV cache plus a virtual key (logit sinks[h], value 0); optional window",
    make_inputs=_decode_inputs, alloc_out=lambda i: torch.empty_like(i["q"]), launch=sdpa_decode_sink,
    oracle=sdpa_decode_sink_oracle, peer=sdpa_decode_sink_torch,
    cases=[
        Case({"B": 2, "H": 4, "H_kv": 2, "T": 64, "D": 16, "lens": (64, 23)}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 4, "H_kv": 1, "T": 50, "D": 32, "window": 20}, _CPU, _INTERPRETABLE),
        Case({"B": 2, "H": 2, "H_kv": 2, "T": 40, "D": 64, "lens": (37, 0), "window": 9}, _CPU, _INTERPRETABLE),
        Case({"B": 1, "H": 8, "H_kv": 1, "T": 48, "D": 32, **_TF32}, _CPU, ("float32",)),
        # 4k keys at both head dims with and without a window; 32k keys (the split-K case) at each head dim once
        *[Case({**_DECODE_MODEL, "T": 4096, "D": D, "window": w}, _GPU) for D in (64, 128) for w in (None, 128)],
        Case({**_DECODE_MODEL, "T": 32768, "D": 64, "window": None}, _GPU),
        Case({**_DECODE_MODEL, "T": 32768, "D": 128, "window": 128}, _GPU),
        Case({"B": 4, "H": 64, "H_kv": 8, "T": 4100, "D": 64, "lens": (4100, 3001, 17, 1), "window": 1000}, _GPU),
        Case({**_DECODE_MODEL, "T": 4096, "D": 128, **_TF32}, _GPU, ("float32",)),
        *[Case({**_DECODE_MODEL, "T": 32768, "D": D, **_TF32X3}, _GPU, _FP32) for D in (64, 128)],
        Case({"B": 2, "H": 64, "H_kv": 8, "T": 4100, "D": 64, "lens": (4100, 77), "window": 1000, **_TF32X3},
             _GPU, _FP32),
        Case({"B": 1, "H": 4, "H_kv": 2, "T": 40, "D": 32, "lens": (33,), **_TF32X3}, _CPU, _FP32),
    ],
    bench=[row for T, D, w in ((4096, 64, None), (32768, 64, None), (32768, 128, None), (32768, 64, 128))
           for row in _bench_rows(f"{T} cached keys, 64 q / 8 kv heads x {D}" + (f", window {w}" if w else ""),
                                  {**_DECODE_MODEL, "T": T, "D": D, "window": w}, _decode_flops, _decode_bytes)],
    tol_kind="reduction", variants=_decode_variants,
))
