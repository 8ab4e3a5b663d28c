"""A conv input made time-major by its producer (kernels.conv.TimeMajor): adain1d_time_major and act1d_time_major
write what the conv's own copy of their one-layout output would hold, bit for bit and its padding zero; the tap
kernel reads it to the same bits as x itself; a layout other than the plan's is refused."""
import pytest
import torch

from tests.conftest import KERNEL_DEVICE
from tilewave.kernels import antialias as A
from tilewave.kernels import conv as C
from tilewave.kernels import norm as K
from tilewave.kernels.conv.tap import _x_time_major


def _adain_inputs(B, Cn, L, dtype, seed, lengths):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(B, Cn, L, generator=g) * 2 + torch.randn(B, Cn, 1, generator=g) * 3).to(dtype)
    gamma = (torch.randn(B, Cn, generator=g) * 0.5 + 1).to(dtype)
    beta = (torch.randn(B, Cn, generator=g) * 0.5).to(dtype)
    alpha = torch.randn(Cn, generator=g) * 0.3 + 1
    n = None
    if lengths:
        n = torch.randint(2, L, (B,), generator=g)
        n[0], n[-1] = L, 1
    dev = KERNEL_DEVICE
    return (x.to(dev), gamma.to(dev), beta.to(dev), alpha.to(dev), None if n is None else n.to(dev))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("B,Cn,L,act,lengths,split", [
    (2, 5, 77, "snake", False, None),
    (3, 6, 140, "leaky_relu", True, None),
    (2, 3, 9000, "snake", True, True),  # two 8,192-frame chunks: the moments from the split form's kernel
    (1, 12, 33, "none", False, None),
])
def test_adain_time_major_is_the_conv_copy_of_adain_bit_for_bit(dtype, B, Cn, L, act, lengths, split):
    x, gamma, beta, alpha, n = _adain_inputs(B, Cn, L, dtype, seed=L + Cn, lengths=lengths)
    kw = dict(lengths=n, act=act, alpha=alpha if act == "snake" else None, slope=0.2, split=split)
    y = K.adain1d(x, gamma, beta, **kw)
    for pos_lo, pos_hi in ((-1, L + 1), (-5, L + 70)):
        want, left = _x_time_major(y, pos_lo, pos_hi)
        Lp, pitch = want.shape[1:]
        out = torch.full((B, Lp, pitch), float("nan"), dtype=dtype, device=x.device)  # poisoned: every cell written
        got = K.adain1d_time_major(x, gamma, beta, left, Lp, pitch, out=out, **kw)
        assert got is out and torch.isfinite(got).all()
        assert torch.equal(got, want), f"layout {(left, Lp, pitch)}: not adain1d's bits"
        assert got[:, left:left + L, :Cn].abs().max() > 0.1  # the comparison sees values
    with pytest.raises(ValueError, match="left \\+ L <= Lp"):
        K.adain1d_time_major(x, gamma, beta, 2, L + 1, Cn, **kw)



# (rows, cols, iters) of the tile: the launcher's, and a small one whose seams (tile rows, tiles, programs of two
# tiles) fall inside short rows; channel counts below, at and past one program's 8 (fp16) or 4 (fp32) channels
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("B,Cn,L,tile,snakebeta", [
    (2, 5, 77, (8, 8, 2), True),
    (1, 12, 203, (8, 8, 2), False),
    (2, 3, 1, (8, 8, 2), True),
    (1, 9, 700, (A.TILE_ROWS, A.TILE_COLS, 2), True),
])
def test_act1d_time_major_is_the_conv_copy_of_act1d_bit_for_bit(request, dtype, B, Cn, L, tile, snakebeta):
    if KERNEL_DEVICE == "cuda" and dtype == torch.float32 and snakebeta and L > 1:
        # measured on the H100 (2026-12-08 01:10, session 33; BigVGAN.time_major_inputs stays off): in float32
        # with a beta the two kernels' bits differ, by rounding (the model's audio by 6e-7), though sm_90's PTX
        # holds the same float instructions; strict, so that a fix shows here
        request.applymarker(pytest.mark.xfail(strict=True, reason="act1d_time_major's float32 snakebeta bits on sm_90"))
    g = torch.Generator().manual_seed(L + Cn)
    x = (torch.randn(B, Cn, L, generator=g) * 2).to(dtype).to(KERNEL_DEVICE)
    alpha = (torch.randn(Cn, generator=g) * 0.5).to(KERNEL_DEVICE)
    beta = (torch.randn(Cn, generator=g) * 0.5).to(KERNEL_DEVICE) if snakebeta else None
    f = A.resample_filter(device=KERNEL_DEVICE)
    rows, cols, iters = tile
    y = A.act1d_poly(x, alpha, beta, True, f, f, rows=rows, cols=cols, num_warps=1, iters=iters)
    for pos_lo, pos_hi in ((-1, L + 1), (-40, L + 70)):
        want, left = _x_time_major(y, pos_lo, pos_hi)
        Lp, pitch = want.shape[1:]
        out = torch.full((B, Lp, pitch), float("nan"), dtype=dtype, device=x.device)  # poisoned: every cell written
        got = A.act1d_time_major(x, alpha, beta, True, f, f, left, Lp, pitch, out=out, rows=rows, cols=cols,
                                 iters=iters)
        assert got is out and torch.isfinite(got).all()
        assert torch.equal(got, want), f"layout {(left, Lp, pitch)}: not act1d's bits"
        assert got[:, left:left + L, :Cn].abs().max() > 0.1  # the comparison sees values
    with pytest.raises(ValueError, match="left \\+ L <= Lp"):
        A.act1d_time_major(x, alpha, beta, True, f, f, 2, L + 1, pitch)


@pytest.mark.parametrize("channels,Cn", [(16, 64), (32, 64), (32, 40)])
def test_act1d_time_major_at_16_and_32_channels_a_program_is_act1d_bit_for_bit(channels, Cn):
    # the wider programs the H100 comparison asks for next (a time step's store then spans 32 or 64 bytes of a
    # 16-bit row, not 16); a pitch of 40 takes its largest power of two, 8
    B, L, dtype = 1, 60, torch.float16
    g = torch.Generator().manual_seed(channels + Cn)
    x = (torch.randn(B, Cn, L, generator=g) * 2).to(dtype).to(KERNEL_DEVICE)
    alpha, beta = (torch.randn(2, Cn, generator=g) * 0.5).to(KERNEL_DEVICE)
    f = A.resample_filter(device=KERNEL_DEVICE)
    y = A.act1d_poly(x, alpha, beta, True, f, f, rows=8, cols=8, num_warps=1, iters=2)
    want, left = _x_time_major(y, -40, L + 70)
    Lp, pitch = want.shape[1:]
    out = torch.full((B, Lp, pitch), float("nan"), dtype=dtype, device=x.device)
    got = A.act1d_time_major(x, alpha, beta, True, f, f, left, Lp, pitch, out=out, rows=8, cols=8, iters=2,
                             channels=channels)
    assert torch.equal(got, want) and got[:, left:left + L, :Cn].abs().max() > 0.1
    assert A.time_major_launch_args(x, 12, pitch, 8, 8, 2, False, channels)[3] == min(channels, 8 if Cn == 40 else 64)


def _conv_inputs(B, Cn, Co, L, K_, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, Cn, L, generator=g).to(dtype)
    w = (torch.randn(Co, Cn, K_, generator=g) * 0.2).to(dtype)
    b = (torch.randn(Co, generator=g) * 0.1).to(dtype)
    return x.to(KERNEL_DEVICE), w.to(KERNEL_DEVICE), b.to(KERNEL_DEVICE)


def _time_major(x, layout):
    left, Lp, pitch = layout
    B, Cn, L = x.shape
    data = torch.zeros(B, Lp, pitch, dtype=x.dtype, device=x.device)
    data[:, left:left + L, :Cn] = x.transpose(1, 2)
    return C.TimeMajor(data, left, Cn, L)


@pytest.mark.parametrize("dtype,mode", [(torch.float16, "ieee"), (torch.float32, "tf32")])
@pytest.mark.parametrize("B,Cn,Co,L,K_,dilation,padding", [(2, 16, 16, 40, 3, 1, 1), (1, 24, 16, 37, 3, 3, 3),
                                                           (2, 16, 32, 50, 7, 1, 3)])
def test_the_tap_kernel_reads_a_time_major_input_to_the_same_bits(dtype, mode, B, Cn, Co, L, K_, dilation, padding):
    x, w, b = _conv_inputs(B, Cn, Co, L, K_, dtype, seed=L)
    layout = C.time_major_layout(x, w, b, 1, padding, dilation, precision=mode, pointer=True)
    assert layout is not None, "a tensor-core stride-1 conv plans the tap kernel"
    want = C.conv1d(x, w, b, 1, padding, dilation, precision=mode)
    got = C.conv1d(_time_major(x, layout), w, b, 1, padding, dilation, precision=mode)
    assert torch.isfinite(got).all() and torch.equal(got, want)
    left, Lp, pitch = layout
    with pytest.raises(ValueError, match="tap kernel reads"):
        C.conv1d(_time_major(x, (left + 1, Lp + 1, pitch)), w, b, 1, padding, dilation, precision=mode)


def test_only_the_tap_kernel_asks_for_a_time_major_input():
    x, w, b = _conv_inputs(1, 8, 1, 30, 3, torch.float32, seed=1)  # one output channel: the direct kernel
    assert C.time_major_layout(x, w, b, 1, 1, 1, precision="tf32", pointer=True) is None
    with pytest.raises(ValueError, match="tap kernel's stride-1 form"):
        C.conv1d(_time_major(x, (1, 40, 8)), w, b, 1, 1, 1, precision="tf32")
    x, w, b = _conv_inputs(1, 16, 16, 30, 3, torch.float16, seed=2)
    if not x.is_cuda:  # the interpreter's tap kernel reads x itself (the pointer form): no copy to save
        assert C.time_major_layout(x, w, b, 1, 1, 1, precision="ieee") is None
        assert C.time_major_layout(x, w, b, 1, 1, 1, precision="ieee", pointer=True) is not None
