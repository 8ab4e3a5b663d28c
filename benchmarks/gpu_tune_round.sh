#!/usr/bin/env bash
# One device call for several helpers' tuning scripts: each branch's files are staged (git archive) under
# .gpu/trees/<name> here and carried; on the GPU each benchmarks/tune_<name>.py runs from its own tree, one
# after another (timings must not share the GPU), output to $OUT/<name>.txt.
#   here:   benchmarks/gpu_tune_round.sh stage conv act1d ...     (then run with carry [".gpu/trees"])
#   device: benchmarks/gpu_tune_round.sh run conv act1d ...
set -uo pipefail
mode=${1:?stage|run}; shift
case "$mode" in
stage)
  rm -rf .gpu/trees && mkdir -p .gpu/trees
  for n in "$@"; do mkdir -p ".gpu/trees/$n" && git -C "/work/wt/$n" archive "$n" | tar -x -C ".gpu/trees/$n"; done
  du -sh .gpu/trees ;;
run)
  OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; date -u; } > "$OUT/env.txt"
  cat "$OUT/env.txt"
  for n in "$@"; do
    ( cd ".gpu/trees/$n" && PYTHONUNBUFFERED=1 PYTHONPATH=. timeout "${TUNE_TIMEOUT:-150}" python3 "benchmarks/tune_$n.py" ) \
      > "$OUT/$n.txt" 2>&1
    echo "== $n rc=$? $(wc -l < "$OUT/$n.txt") lines"
  done ;;
esac
