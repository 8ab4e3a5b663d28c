"""The on-disk helpers: a write that fails leaves the old file or folder as it was and no temporary behind, and
tilewave.assets stays below the models and the engine (it imports only the standard library)."""
import ast
import hashlib
import sys
from pathlib import Path

import pytest

from tilewave import assets


def test_sha256_is_the_file_digest(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(b"x" * (5 << 20))  # more than one read block
    assert assets.sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_atomic_file_appears_whole_or_not_at_all(tmp_path):
    path = tmp_path / "made" / "weights.pt"
    with pytest.raises(RuntimeError):
        with assets.atomic_file(path) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("the writer failed")
    assert not path.parent.exists() or list(path.parent.iterdir()) == []
    with assets.atomic_file(path) as tmp:
        tmp.write_bytes(b"whole")
    assert path.read_bytes() == b"whole" and list(path.parent.iterdir()) == [path]


def test_a_failed_atomic_file_leaves_the_old_file_and_a_good_one_is_0o644_and_synced_when_asked(tmp_path,
                                                                                             monkeypatch):
    path = tmp_path / "a.wav"
    path.write_bytes(b"old")
    synced = []
    real_fsync = assets.os.fsync
    monkeypatch.setattr(assets.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    with pytest.raises(RuntimeError):
        with assets.atomic_file(path, fsync=True) as tmp:
            tmp.write_bytes(b"new, but cut short")
            raise RuntimeError("the encoder failed")
    assert path.read_bytes() == b"old" and list(tmp_path.iterdir()) == [path] and synced == []
    with assets.atomic_file(path) as tmp:
        tmp.write_bytes(b"unsynced")
    assert synced == []
    with assets.atomic_file(path, fsync=True) as tmp:
        tmp.write_bytes(b"new")
    assert len(synced) == 1
    assert path.read_bytes() == b"new" and list(tmp_path.iterdir()) == [path]
    assert path.stat().st_mode & 0o777 == 0o644  # mkstemp's own 0o600 would shut other readers out


def test_an_atomic_files_temporary_name_is_hidden_unique_and_ends_in_its_suffix(tmp_path):
    path = tmp_path / "a.wav"
    with assets.atomic_file(path, suffix=".partial") as first, assets.atomic_file(path, suffix=".partial") as second:
        for tmp in (first, second):
            assert tmp.parent == tmp_path and tmp.name.startswith(".a.wav.") and tmp.name.endswith(".partial")
        assert first != second  # two writers of one file in one process (two threads) never share a name
        assert sorted(tmp_path.glob(".*.partial")) == sorted([first, second])  # what a sweep of leftovers finds
        first.write_bytes(b"first")
        second.write_bytes(b"second")
    assert path.read_bytes() == b"first" and list(tmp_path.iterdir()) == [path]  # the last to finish wins
    with assets.atomic_file(path) as tmp:
        assert tmp.name.startswith(".a.wav.") and tmp.name.endswith(".tmp")


def test_an_atomic_folder_replaces_the_old_one_only_when_filled(tmp_path):
    final = tmp_path / "voices"
    final.mkdir()
    (final / "old.bin").write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with assets.atomic_folder(final) as tmp:
            (tmp / "new.bin").write_bytes(b"new")
            raise RuntimeError("the download broke")
    assert [p.name for p in final.iterdir()] == ["old.bin"] and list(tmp_path.iterdir()) == [final]
    with assets.atomic_folder(final) as tmp:
        (tmp / "new.bin").write_bytes(b"new")
    assert [p.name for p in final.iterdir()] == ["new.bin"] and list(tmp_path.iterdir()) == [final]


def test_assets_imports_only_the_standard_library():
    tree = ast.parse(Path(assets.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {"." if node.level else node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}  # a relative import is a tilewave one
    assert imported - {"__future__"} <= sys.stdlib_module_names, imported - sys.stdlib_module_names
