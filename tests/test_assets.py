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
