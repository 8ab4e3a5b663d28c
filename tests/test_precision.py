"""The one precision module: its modes, its check, and the mode in force inside and outside a scope."""
import threading

import pytest
import torch

from tilewave import precision
from tilewave.errors import InputError


def test_outside_any_scope_the_mode_is_exact():
    assert precision.current() == precision.OUTSIDE_SCOPE == "ieee"


def test_a_scope_sets_the_mode_and_restores_the_outer_one_even_on_error():
    with precision.scope("tf32"):
        assert precision.current() == "tf32"
        with pytest.raises(RuntimeError), precision.scope("tf32x3"):
            assert precision.current() == "tf32x3"
            raise RuntimeError("inside")
        assert precision.current() == "tf32"
    assert precision.current() == "ieee"


def test_a_scope_is_private_to_its_thread():
    seen = []
    with precision.scope("tf32"):
        worker = threading.Thread(target=lambda: seen.append(precision.current()))
        worker.start()
        worker.join()
    assert seen == ["ieee"]


@pytest.mark.parametrize("bad", ["fp16", "", None, "IEEE", 3])
def test_an_unknown_mode_is_refused_naming_the_value_and_the_choices(bad):
    with pytest.raises(InputError, match=r"precision .* is not one of ieee, tf32x3, tf32"):
        precision.check(bad)
    with pytest.raises(InputError):
        with precision.scope(bad):
            pass
    assert precision.current() == "ieee"


def test_the_default_is_one_of_the_modes():
    assert precision.DEFAULT in precision.MODES == ("ieee", "tf32x3", "tf32")


def test_16bit_operands_keep_their_familys_dot_form_and_float32_takes_the_mode():
    for mode in precision.MODES:
        assert precision.tile_class(mode, torch.float32) == mode
        assert precision.dot_input(mode, torch.float32, "ieee") == mode
        for dt in (torch.float16, torch.bfloat16):
            assert precision.tile_class(mode, dt) == "16bit"
            assert precision.dot_input(mode, dt, "tf32") == "tf32"
    with pytest.raises(InputError):
        precision.dot_input("fast", torch.float16, "tf32")


@pytest.mark.parametrize("outer, inner", [("tf32", "tf32x3"), ("tf32x3", "tf32x3"), ("ieee", "ieee")])
def test_float32_class_raises_tf32_to_tf32x3_and_keeps_the_rest(outer, inner):
    with precision.scope(outer):
        with precision.float32_class() as mode:
            assert mode == precision.current() == inner
        assert precision.current() == outer
    with precision.float32_class():
        assert precision.current() == "ieee"  # outside any scope: exact stays exact


def test_a_dtype_name_gives_its_torch_dtype_and_an_unknown_one_names_the_choices():
    assert precision.check_dtype("bfloat16") is torch.bfloat16
    assert precision.check_dtype("float32", precision.KOKORO_DTYPES) is torch.float32
    with pytest.raises(InputError, match=r"Kokoro dtype 'float16' is not one of float32, bfloat16"):
        precision.check_dtype("float16", precision.KOKORO_DTYPES, "Kokoro dtype")
    for bad in ("fp16", None, torch.float32):
        with pytest.raises(InputError, match=r"dtype .* is not one of float32, float16, bfloat16"):
            precision.check_dtype(bad)


def test_auto_dtype_is_bfloat16_only_on_a_cpu_with_native_bfloat16(tmp_path):
    assert precision.resolve_dtype("auto", "cpu", {"avx2", "amx_bf16", "amx_tile"}) == "bfloat16"
    assert precision.resolve_dtype("auto", "cpu", {"avx512f", "avx512_bf16"}) == "bfloat16"
    assert precision.resolve_dtype("auto", "cpu", {"avx2", "avx512f", "fma"}) == "float32"
    assert precision.resolve_dtype("auto", "cuda", {"amx_bf16"}) == "float32"
    assert precision.resolve_dtype("bfloat16", "cuda") == "bfloat16"  # a named dtype is kept as it is
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_bf16\n")
    assert precision.cpu_flags(str(info)) == {"fpu", "avx2", "amx_bf16"}
    assert precision.cpu_flags(str(tmp_path / "missing")) == set()


def test_a_session_resolves_auto_and_names_it_among_the_choices():
    from tilewave.engine import Session

    want = torch.bfloat16 if set(precision.NATIVE_BF16_FLAGS) & precision.cpu_flags() else torch.float32
    assert Session(device="cpu", dtype="auto").dtype is want
    with pytest.raises(InputError, match=r"Kokoro dtype 'float16' is not one of float32, bfloat16, auto"):
        Session(device="cpu", dtype="float16")
