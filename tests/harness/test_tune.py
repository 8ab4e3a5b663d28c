"""`tilewave tune`: what it sweeps, how it refuses bad arguments and a machine without a GPU, and that the
overrides it sweeps reach the launchers (timing itself needs a GPU and is not run here)."""
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import KERNEL_DEVICE
from tilewave import cli
from tilewave.harness import tune
from tilewave.harness.catalogue import load_all_kernels
from tilewave.kernels import conv as K
from tilewave.spec.tolerance import scaled_max_error

REGISTRY = load_all_kernels()


@pytest.mark.parametrize("family", tune.FAMILIES)
def test_every_tunable_kernel_has_candidates_at_each_of_its_bench_shapes(family):
    plan = list(tune.sweep(family, REGISTRY))
    assert {k.name for k, _, _, _ in plan} == ({"conv1d", "conv1d_transpose", "conv1d_fused"} if family == "conv"
                                                else {"sdpa_bidirectional", "sdpa_decode_sink"})
    for k, shape, dtype, cands in plan:
        assert shape in k.bench and dtype in (shape.dtypes or k.dtypes)
        labels = [c.label for c in cands]
        assert len(labels) == len(set(labels)) and all(c.options for c in cands), (k.name, shape.label)


def test_conv_tile_candidates_are_the_tables_tiles_of_the_calls_class():
    tables = (K.TAP_CONFIGS, K.INTERLEAVED_CONFIGS, K.GEMM_CONFIGS, K.plan.GEMM_TRIAL_CONFIGS)
    for _, shape, dtype, cands in tune.sweep("conv", REGISTRY):
        tap_cls, gemm_cls = tune._classes(dtype, shape.params.get("precision", "ieee"))
        allowed = {c for t in tables for cls in (tap_cls, gemm_cls) for c in t.get(cls, ())}
        tiles = [c.options["tile"] for c in cands if "tile" in c.options]
        assert tiles and set(tiles) <= allowed, (shape.label, dtype)


def test_a_dtype_filter_and_one_kernel_narrow_the_sweep():
    plan = list(tune.sweep("attention", REGISTRY, dtypes=["float16"], kernel="sdpa_decode_sink"))
    assert plan and {(k.name, d) for k, _, d, _ in plan} == {("sdpa_decode_sink", "float16")}


def test_unknown_family_and_kernel_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="tunable families: conv, attention"):
        list(tune.sweep("spectral", REGISTRY))
    with pytest.raises(ValueError, match="'lstm' is not a conv kernel; choose one of .*conv1d_fused"):
        list(tune.sweep("conv", REGISTRY, kernel="lstm"))
    assert cli.main(["tune", "vision", "--list"]) == 2


def test_without_a_gpu_tune_refuses_and_says_what_works(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert tune.run_tune("conv", REGISTRY, kernel="conv1d") == 2
    err = capsys.readouterr().err
    assert "no CUDA device is visible" in err and "--list" in err


def test_list_prints_every_shape_and_candidate_without_a_gpu(capsys):
    assert cli.main(["tune", "attention", "-k", "sdpa_bidirectional", "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    expected = list(tune.sweep("attention", REGISTRY, kernel="sdpa_bidirectional"))
    assert len(lines) == len(expected) and all(line.startswith("sdpa_bidirectional") and "tile" in line
                                               for line in lines)


@pytest.mark.parametrize("options", [{"tile": K.GemmConfig(16, 32, 16, 4, 1)},
                                     {"tap_persistent": {"16bit": 1, "tf32": 1, "tf32x3": 1}}])
def test_a_swept_override_reaches_the_conv_launcher_and_computes_the_same_conv(options, monkeypatch):
    monkeypatch.setattr(K.plan, "_sm_count", lambda device: 1)  # 2 tiles on 1 SM: persistent past 1 tile per SM
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 32, 40, generator=gen).to(KERNEL_DEVICE)
    w = (torch.randn(48, 32, 3, generator=gen) / 16).to(KERNEL_DEVICE)
    y = tune._conv_run("conv1d")({"x": x, "weight": w, "bias": None, "stride": 1, "padding": 1, "precision": "tf32x3"},
                                 None, options)
    ref = F.conv1d(x.cpu().double(), w.cpu().double(), None, 1, 1)
    assert y.shape == ref.shape and scaled_max_error(y, ref) < 1e-5
    plan = K.plan.conv_plan(False, x, 48, 40, 3, 1, 1, 1, 1, "none", False, False, "tf32x3", **options)
    assert plan.design == "tap"
    if "tile" in options:
        assert plan.cfg == options["tile"]
    else:
        assert plan.persistent and plan.grid == (1,)
