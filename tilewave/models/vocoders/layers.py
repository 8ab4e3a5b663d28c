"""What the vocoders share: safe checkpoint reading, weight-norm folding, parameter checks, the profile hook."""
from __future__ import annotations

import contextlib
import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from tilewave import profiling
from tilewave.errors import WeightsError
from tilewave.profiling import Profiler


def timed(profiler: Profiler | None, stage: str, op: str) -> contextlib.AbstractContextManager:
    """Time one op under 'stage/op' (op is 'conv', 'conv_transpose' or 'act'); nothing when not profiling."""
    return profiling.of(profiler).stage(f"{stage}/{op}")


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """torch.load with weights_only=True: tensors and plain containers only, never arbitrary objects."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"checkpoint {str(path)!r} does not exist; pass the file or folder that holds it")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        refused = [line.strip() for line in str(exc).splitlines() if "Unsupported global" in line]
        if refused:
            raise WeightsError(f"checkpoint {str(path)!r} holds objects other than tensors and plain containers, "
                               f"so it was not loaded (only safe weights-only loading is done; {refused[0]}). "
                               f"Re-save it as a dict of tensors with torch.save") from None
        raise WeightsError(f"checkpoint {str(path)!r} is not a readable PyTorch file (truncated or corrupt?): "
                           f"{str(exc).splitlines()[-1] if str(exc) else type(exc).__name__}. Download or copy "
                           f"it again") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as exc:
        raise WeightsError(f"checkpoint {str(path)!r} is not a readable PyTorch file (truncated or corrupt?): "
                           f"{type(exc).__name__}: {exc}. Download or copy it again") from None
    if not isinstance(obj, dict):
        raise WeightsError(f"checkpoint {str(path)!r} holds a {type(obj).__name__}, expected a dict of tensors")
    return obj


def fold_weight_norm(g: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """w = g * v / ||v||, the norm over every dim but 0 (torch weight_norm's dim=0); a zero v stays zero."""
    v = v.float()
    norm = v.flatten(1).norm(dim=1).view(-1, *([1] * (v.dim() - 1)))
    scale = torch.where(norm > 0, g.float() / norm.clamp_min(torch.finfo(torch.float32).tiny), 0.0)
    return v * scale


def take(state: dict[str, torch.Tensor], key: str, shape: tuple[int, ...], used: set[str]) -> torch.Tensor:
    """state[key], checked to be a floating tensor of `shape`."""
    if key not in state:
        raise WeightsError(f"checkpoint lacks parameter {key!r} (expected shape {list(shape)}); it is not a "
                           f"checkpoint of this model and configuration")
    t = state[key]
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        raise WeightsError(f"checkpoint parameter {key!r} is a {type(t).__name__}"
                           f"{'' if not isinstance(t, torch.Tensor) else ' of ' + str(t.dtype)}, expected floats")
    if tuple(t.shape) != tuple(shape):
        raise WeightsError(f"checkpoint parameter {key!r} has shape {list(t.shape)}, the configuration needs "
                           f"{list(shape)}: the config.json does not belong to these weights")
    used.add(key)
    return t


def take_weight(state: dict[str, torch.Tensor], prefix: str, shape: tuple[int, ...], used: set[str]) -> torch.Tensor:
    """A conv weight stored plain ('.weight'), weight-normed ('.weight_g' / '.weight_v'), or as torch's
    parametrization ('.parametrizations.weight.original0/1'); returned folded."""
    g_shape = (shape[0],) + (1,) * (len(shape) - 1)
    for g_key, v_key in ((f"{prefix}.weight_g", f"{prefix}.weight_v"),
                         (f"{prefix}.parametrizations.weight.original0", f"{prefix}.parametrizations.weight.original1")):
        if g_key in state or v_key in state:
            return fold_weight_norm(take(state, g_key, g_shape, used), take(state, v_key, shape, used))
    return take(state, f"{prefix}.weight", shape, used)


def reject_unused(state: dict[str, torch.Tensor], used: set[str], what: str) -> None:
    extra = sorted(set(state) - used)
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise WeightsError(f"checkpoint has {len(extra)} parameters that {what} does not have ({shown}): "
                           f"it belongs to another model or configuration")
