#!/usr/bin/env bash
# One device call: where bench rows lose time. Logs to $OUT.
#   benchmarks/gpu_diag.sh [timing] [ncu]   diag/timing.py (cold-cache procedures, host time), then Nsight Compute
#                                           on a few memory-bound rows (default: both)
#   benchmarks/gpu_diag.sh stalls TAG KERNEL_REGEX KERNEL "LABEL" DTYPE
#                                           one registry row's kernel: throughputs, occupancy, stall reasons
#   benchmarks/gpu_diag.sh kernels KERNEL "LABEL" DTYPE
#                                           every kernel one call of the row launches, with its duration
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)

stalls() {  # stalls TAG KERNEL_REGEX KERNEL "LABEL" DTYPE (the third launch of the kernel: past compile and warm-up)
  timeout 180 "$NCU" --clock-control none -k "regex:$2" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section InstructionStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    python3 benchmarks/diag/timing.py --once "$3" "$4" "$5" > "$OUT/ncu_$1.txt" 2>&1
  echo "== $1 rc=$?"
  grep -E "Duration|Throughput|Hit Rate|Registers Per|Grid Size|Block Size|Achieved Occupancy|Executed Ipc A|Issue Slots|Pipe|stalled" \
    "$OUT/ncu_$1.txt" | awk '$NF+0 >= 0.05 || !/stalled/' \
    | sed -E 's/ +/ /g;s/smsp__average_warps_issue_stalled_//;s/_per_issue_active.ratio//' | head -40
}

case "${1:-}" in
stalls) shift; stalls "$@"; exit 0 ;;
kernels)
  timeout 180 "$NCU" --clock-control none --section SpeedOfLight python3 benchmarks/diag/timing.py --once "$2" "$3" "$4" 2 \
    > "$OUT/ncu_kernels.txt" 2>&1
  grep -E "^  [A-Za-z_].*\(|Duration" "$OUT/ncu_kernels.txt" | paste - - | sed -E 's/ +/ /g' | cut -c1-160
  exit 0 ;;
esac

what=${*:-timing ncu}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; date -u; } | tee "$OUT/env.txt"
case " $what " in *" timing "*)
  timeout 300 python3 benchmarks/diag/timing.py 2>&1 | tee "$OUT/diag_timing.txt" ;; esac
case " $what " in *" ncu "*)
  stalls act1d_f32 _act1d_poly act1d "large [1, 128, 1048576]" float32
  stalls act1d_bf16 _act1d_poly act1d "large [1, 128, 1048576]" bfloat16
  stalls decode_h128 _decode_split sdpa_decode_sink "32768 cached keys, 64 q / 8 kv heads x 128" float16
  stalls istft_tail _istft istft_exp_sin "large [16, 22, 96001]" float32
  ;; esac
