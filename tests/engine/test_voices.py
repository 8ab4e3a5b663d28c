"""Voices by name, by file (.npz / .pt), as blends; and every way of getting one wrong."""
import numpy as np
import pytest
import torch

from tilewave.engine.voices import builtin_voices, load_voice, style_for
from tilewave.errors import InputError

SHIPPED = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]


def random_pack(seed):
    return np.random.default_rng(seed).standard_normal((510, 1, 256)).astype(np.float32)


def test_shipped_voices_by_name():
    assert builtin_voices() == SHIPPED
    packs = [load_voice(name) for name in SHIPPED]
    assert all(p.shape == (510, 1, 256) and p.dtype == torch.float32 for p in packs)
    assert not torch.equal(packs[0], packs[1])


def test_unknown_voice_lists_the_available_ones():
    with pytest.raises(InputError) as err:
        load_voice("af_heart")
    assert "'af_heart'" in str(err.value) and all(name in str(err.value) for name in SHIPPED)


def test_blend_is_the_weighted_mean():
    a, b = load_voice("jf_alpha"), load_voice("jm_kumo")
    torch.testing.assert_close(load_voice("jf_alpha:0.7,jm_kumo:0.3"), 0.7 * a + 0.3 * b)
    torch.testing.assert_close(load_voice("jf_alpha:3, jm_kumo:1"), 0.75 * a + 0.25 * b)
    torch.testing.assert_close(load_voice("jf_alpha,jm_kumo"), (a + b) / 2)


@pytest.mark.parametrize("blend", ["jf_alpha:0,jm_kumo:1", "jf_alpha:-1,jm_kumo:2", "jf_alpha:nan,jm_kumo:1",
                                   ":0.5,jm_kumo:0.5"])
def test_bad_blend_weights(blend):
    with pytest.raises(InputError, match="blend"):
        load_voice(blend)


@pytest.mark.parametrize("voice", ["", "  ", 3, None])
def test_no_usable_voice_given(voice):
    with pytest.raises(InputError, match="voice"):
        load_voice(voice)


def test_blend_of_an_unknown_voice():
    with pytest.raises(InputError, match="'nobody'"):
        load_voice("jf_alpha:0.5,nobody:0.5")


def test_own_npz_and_pt_packs(tmp_path):
    one, two = random_pack(1), random_pack(2)
    np.savez(tmp_path / "mine.npz", voice=one)
    np.savez(tmp_path / "two.npz", a=one, b=two)
    torch.save(torch.from_numpy(two), tmp_path / "mine.pt")
    assert torch.equal(load_voice(str(tmp_path / "mine.npz")), torch.from_numpy(one))
    assert torch.equal(load_voice(tmp_path / "mine.pt"), torch.from_numpy(two))
    assert torch.equal(load_voice(f"{tmp_path / 'two.npz'}#b"), torch.from_numpy(two))
    with pytest.raises(InputError, match="#NAME"):
        load_voice(str(tmp_path / "two.npz"))
    with pytest.raises(InputError, match="no voice 'c'"):
        load_voice(f"{tmp_path / 'two.npz'}#c")
    blend = load_voice(f"{tmp_path / 'mine.npz'}:0.5,{tmp_path / 'mine.pt'}:0.5")
    torch.testing.assert_close(blend, torch.from_numpy((one + two) / 2))


def test_bad_pack_files(tmp_path):
    np.savez(tmp_path / "shape.npz", v=np.zeros((510, 128), np.float32))
    np.savez(tmp_path / "nan.npz", v=np.full((510, 1, 256), np.nan, np.float32))
    np.savez(tmp_path / "pickled.npz", v=np.array([{"a": 1}], dtype=object))
    torch.save({"voice": torch.zeros(510, 1, 256)}, tmp_path / "dict.pt")
    (tmp_path / "garbage.pt").write_bytes(b"not a tensor")
    cases = {"shape.npz": r"shape \[510, 128\]", "nan.npz": "NaN", "pickled.npz": "cannot be read",
             "dict.pt": "holds a dict", "garbage.pt": "cannot be read", "missing.npz": "does not exist"}
    for name, message in cases.items():
        with pytest.raises(InputError, match=message):
            load_voice(str(tmp_path / name))


def test_tensor_voice_and_style_by_length():
    pack = torch.from_numpy(random_pack(3))
    assert torch.equal(load_voice(pack), pack)
    assert torch.equal(style_for(pack, 1), pack[0]) and torch.equal(style_for(pack, 510), pack[509])
    for n in (0, 511):
        with pytest.raises(InputError, match="1 to 510"):
            style_for(pack, n)
