"""The conv entry points: argument checks, output shapes, then the plan's launcher."""
from __future__ import annotations

from tilewave.kernels import activation
from tilewave.kernels.conv.common import ACTS, _DTYPES
from tilewave.kernels.conv.direct import launch_direct
from tilewave.kernels.conv.gemm import launch_gemm
from tilewave.kernels.conv.plan import DEVICE_DESCRIPTORS, conv_plan
from tilewave.kernels.conv.tap import TimeMajor, check_time_major, launch_tap, time_major_layout as _layout
from tilewave.kernels.conv.transpose import conv1d_out_len, conv1d_transpose_out_len
from tilewave.precision import check as check_precision


def _check_args(name, x, weight, bias, residual, alpha, beta, act, stride, padding, dilation, groups,
                precision):
    if x.dim() != 3:
        raise ValueError(f"{name}: x must be [B, C, L], got shape {tuple(x.shape)}")
    if weight.dim() != 3:
        raise ValueError(f"{name}: weight must be 3-D, got shape {tuple(weight.shape)}")
    if x.dtype not in _DTYPES:
        raise ValueError(f"{name}: dtype {x.dtype} not supported; use float32, float16 or bfloat16")
    for label, t in (("weight", weight), ("bias", bias), ("residual", residual), ("alpha", alpha), ("beta", beta)):
        if t is not None and t.dtype != x.dtype:
            raise ValueError(f"{name}: {label} dtype {t.dtype} differs from x dtype {x.dtype}; cast it first")
    if stride < 1 or dilation < 1 or padding < 0 or groups < 1:
        raise ValueError(f"{name}: need stride >= 1, dilation >= 1, padding >= 0, groups >= 1; got "
                         f"stride={stride} dilation={dilation} padding={padding} groups={groups}")
    if act not in ACTS:
        raise ValueError(f"{name}: act must be one of {ACTS}, got {act!r}")
    if act == "snake" and (alpha is None or alpha.numel() != x.shape[1]
                           or (beta is not None and beta.numel() != x.shape[1])):
        raise ValueError(f"{name}: snake needs alpha (and optional beta) with one value per input channel "
                         f"({x.shape[1]}), got alpha {None if alpha is None else tuple(alpha.shape)}")
    check_precision(precision)


def _out_len(name, transposed, x, weight, stride, padding, dilation, groups, output_padding) -> tuple[int, int]:
    """(C_out, L_out) of a call whose weight fits x, else a ValueError saying what to fix."""
    C_in, L_in, K = x.shape[1], x.shape[2], weight.shape[2]
    if transposed:
        C_out = weight.shape[1] * groups
        if weight.shape[0] != C_in or C_in % groups:
            raise ValueError(f"{name}: weight must be [C_in={C_in}, C_out/groups, K] with C_in divisible by "
                             f"groups={groups}, got {tuple(weight.shape)}")
        if not 0 <= output_padding < max(stride, dilation):
            raise ValueError(f"{name}: output_padding ({output_padding}) must be smaller than stride ({stride}) "
                             f"or dilation ({dilation})")
        L_out = conv1d_transpose_out_len(L_in, K, stride, padding, output_padding, dilation)
    else:
        C_out = weight.shape[0]
        if C_in % groups or C_out % groups or weight.shape[1] != C_in // groups:
            raise ValueError(f"{name}: weight must be [C_out, C_in/groups = {C_in // max(groups, 1)}, K] with "
                             f"C_in={C_in} and C_out divisible by groups={groups}, got {tuple(weight.shape)}")
        L_out = conv1d_out_len(L_in, K, stride, padding, dilation)
    if L_out < 1:
        raise ValueError(f"{name}: output length {L_out} < 1 for L={L_in}, K={K}, stride={stride}, "
                         f"padding={padding}, dilation={dilation}; the input is too short")
    return C_out, L_out


_LAUNCHERS = {"tap": launch_tap, "gemm": launch_gemm, "direct": launch_direct}


def _launch(transposed, x, weight, bias, stride, padding, dilation, groups, output_padding, act, slope,
            alpha, beta, residual, scale, precision, out, tap_persistent=None, device_descriptors=DEVICE_DESCRIPTORS,
            tile=None):
    name = "conv1d_transpose" if transposed else "conv1d"
    prepared = x if isinstance(x, TimeMajor) else None
    x = x if prepared is None else prepared.like()
    _check_args(name, x, weight, bias, residual, alpha, beta, act, stride, padding, dilation, groups, precision)
    x, weight = x if prepared is not None else x.contiguous(), weight.contiguous()
    C_out, L_out = _out_len(name, transposed, x, weight, stride, padding, dilation, groups, output_padding)
    B = x.shape[0]
    if out is None:
        out = x.new_empty(B, C_out, L_out)
    elif tuple(out.shape) != (B, C_out, L_out) or not out.is_contiguous():
        raise ValueError(f"{name}: out must be a contiguous {(B, C_out, L_out)} tensor, got {tuple(out.shape)}")
    if residual is not None:
        if tuple(residual.shape) != (B, C_out, L_out):
            raise ValueError(f"{name}: residual must have the output's shape {(B, C_out, L_out)}, "
                             f"got {tuple(residual.shape)}")
        residual = residual.contiguous()
    if B == 0 or C_out == 0:
        return out
    p = conv_plan(transposed, x, C_out, L_out, weight.shape[2], groups, stride, padding, dilation, act,
                  bias is not None, residual is not None, precision, tap_persistent=tap_persistent,
                  device_descriptors=device_descriptors, tile=tile)
    if prepared is not None:
        check_time_major(p, prepared)
        x = prepared.data
    a_arg = x if alpha is None else alpha.contiguous()
    b_arg = a_arg if beta is None else beta.contiguous()
    if p.separate_snake:
        x = activation.snake(x, alpha, beta)
    extra = {} if prepared is None else {"prepared": prepared}
    _LAUNCHERS[p.design](p, x, weight, out if bias is None else bias.contiguous(),
                         out if residual is None else residual, a_arg, b_arg, slope, scale, out, **extra)
    return out


def time_major_layout(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, act="none", precision="ieee",
                      pointer=False) -> tuple[int, int, int] | None:
    """(left, Lp, pitch): the time-major form (tap.TimeMajor) in which conv1d(x, weight, ...) reads x, for a
    producer to write instead of x; None when the call reads x as it is (no tap kernel with tensor descriptors
    for it). pointer: the tap kernel's pointer form counts too (the CPU interpreter, for tests)."""
    _check_args("conv1d", x, weight, bias, None, None, None, "none", stride, padding, dilation, groups, precision)
    C_out, L_out = _out_len("conv1d", False, x, weight, stride, padding, dilation, groups, 0)
    p = conv_plan(False, x, C_out, L_out, weight.shape[2], groups, stride, padding, dilation, act, bias is not None,
                  False, precision)
    if p.design != "tap" or p.separate_snake or p.interleave or not (p.tma or pointer):
        return None
    return _layout(x, p.pos_lo, p.pos_hi)


def _batched(fn):
    """Accept PyTorch's unbatched [C, L] input as [1, C, L]."""
    def wrapper(x, weight, *args, residual=None, out=None, **kwargs):
        if not isinstance(x, TimeMajor) and x.dim() == 2:
            res = None if residual is None else residual.unsqueeze(0)
            o = None if out is None else out.unsqueeze(0)
            return fn(x.unsqueeze(0), weight, *args, residual=res, out=o, **kwargs).squeeze(0)
        return fn(x, weight, *args, residual=residual, out=out, **kwargs)
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


@_batched
def conv1d_fused(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act="none", slope=0.0,
                 alpha=None, beta=None, residual=None, scale=1.0, transposed=False, output_padding=0,
                 precision="ieee", out=None, tap_persistent=None, device_descriptors=DEVICE_DESCRIPTORS, tile=None):
    """scale · (conv(act(x)) + bias + residual); conv is transposed when `transposed` (weight IOK).
    tap_persistent, device_descriptors, tile: launch choices of plan.conv_plan, for tests and tuning."""
    return _launch(transposed, x, weight, bias, stride, padding, dilation, groups, output_padding, act, slope,
                   alpha, beta, residual, scale, precision, out, tap_persistent, device_descriptors, tile)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, precision="ieee", out=None):
    """torch.nn.functional.conv1d; `precision` ('ieee' | 'tf32x3' | 'tf32') applies to float32 storage."""
    return conv1d_fused(x, weight, bias, stride, padding, dilation, groups, precision=precision, out=out)


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     precision="ieee", out=None):
    """torch.nn.functional.conv_transpose1d (same argument order)."""
    return conv1d_fused(x, weight, bias, stride, padding, dilation, groups, transposed=True,
                        output_padding=output_padding, precision=precision, out=out)


def conv1d_transpose_depthwise(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1,
                               out=None):
    """Transposed conv with groups == channels, weight [C, 1, K]."""
    C = x.shape[-2]
    if tuple(weight.shape[:2]) != (C, 1):
        raise ValueError(f"conv1d_transpose_depthwise: weight must be [C={C}, 1, K], got {tuple(weight.shape)}")
    return conv1d_transpose(x, weight, bias, stride, padding, output_padding, C, dilation, out=out)
