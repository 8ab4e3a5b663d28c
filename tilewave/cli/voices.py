"""`tilewave voices`: list the stock voices (language, gender, installed); `tilewave voices fetch` installs them."""
from __future__ import annotations

import sys

from tilewave.errors import InputError, TilewaveError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("voices", help="list the stock Kokoro voices, or fetch them (`tilewave voices fetch`)",
                              description="List every stock Kokoro v1.0 voice with its language, gender and whether "
                                          "it is installed; `fetch` installs them into tilewave's cache.")
    p.set_defaults(run=run_list)
    sub = p.add_subparsers(dest="voices_command")
    f = sub.add_parser("fetch", help="install the 54 stock voices (from npm's kokoro-js 1.2.1, sha256-checked)")
    f.add_argument("--from", dest="source", choices=["npm", "hub"], default="npm",
                   help="npm (default): `npm pack kokoro-js@1.2.1`; hub: hexgrad/Kokoro-82M through huggingface_hub")
    f.add_argument("--tarball", metavar="FILE", help="install from a kokoro-js tarball already downloaded")
    f.add_argument("--force", action="store_true", help="fetch again even when the npm set is installed")
    f.set_defaults(run=run_fetch)


def run_list(args) -> int:
    from tilewave.engine.voice_catalog import DEFAULT_VOICES, OPENAI_VOICES
    from tilewave.engine.voices import voices_dir, voice_list
    from tilewave.text.languages import LANGUAGE_NAMES

    defaults = set(DEFAULT_VOICES.values())
    aliases = {}
    for openai, stock in OPENAI_VOICES.items():
        aliases.setdefault(stock, []).append(openai)
    rows = voice_list()
    print(f"{'voice':<15}{'language':<10}{'':<22}{'gender':<8}{'installed':<11}notes")
    for v in rows:
        notes = (["default"] if v["name"] in defaults else []) + [f"OpenAI '{a}'" for a in aliases.get(v["name"], [])]
        print(f"{v['name']:<15}{v['language']:<10}{LANGUAGE_NAMES[v['language']]:<22}{v['gender']:<8}"
              f"{'yes' if v['installed'] else 'no':<11}{', '.join(notes)}")
    missing = sum(not v["installed"] for v in rows)
    if missing:
        print(f"\n{missing} voices are not installed: `tilewave voices fetch` installs them into {voices_dir()}")
    return 0


def run_fetch(args) -> int:
    from tilewave.engine import voice_install, voices

    try:
        if args.tarball:
            folder = voice_install.install_npm_tarball(args.tarball)
        elif args.source == "hub":
            folder = voice_install.fetch_hub()
        elif voice_install.npm_installed() and not args.force:
            print(f"the stock voices ({voice_install.NPM_PACKAGE}) are installed in {voices.voices_dir()}")
            return 0
        else:
            folder = voice_install.fetch_npm()
    except TilewaveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    print(f"installed {len(voices.installed_voices())} voices into {folder}")
    return 0
