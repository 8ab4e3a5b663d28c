#!/usr/bin/env bash
# One GPU session on the device machine: correctness on CUDA, then timings beside the PyTorch peers.
# Usage (repo root, on the GPU machine): bash benchmarks/gpu_session.sh [FILTER] ; logs go to $OUT (or ./gpu-out).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
FILTER=${1:-}
F=(); [ -n "$FILTER" ] && F=(-f "$FILTER")
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; date -u; } | tee "$OUT/env.txt"
python3 -m tilewave test --device cuda "${F[@]}" 2>&1 | tee "$OUT/test_cuda.txt" | grep -v '^\[PASS\]'
python3 -m tilewave bench -v "${F[@]}" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
