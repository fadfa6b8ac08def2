#!/bin/bash
# On the device machine, from the repository root, with build-deps/ carried (bench/device/deps.sh):
# builds jisu and jisu_tests (bench/device/build.sh), runs the CUDA tests with the structured-
# output ones (token masks on the device, the engine on the GPU with JSON-schema rows in the
# batch, with and without drafts) and then `jisu bench-grammar --device cuda` at batch 1 and 64:
# decode steps unconstrained vs constrained (rounds alternating) and the overhead, on a random-
# weight model of each SHAPE (BF16, default llama-3.1-8b; its synthetic 128K vocabulary is what
# the constrained rows' masks are filled over), trajectories from the bundled tiny-llama.
# Logs under $OUT: build.log, cuda_tests.log, bench_grammar_SHAPE.txt, nvidia_smi.txt. The
# whole script keeps within BUDGET_S seconds (default 570, under the tool's 10 minutes): each
# benchmark gets what is left (its table rows are printed as they come).
# Usage: bash bench/device/grammar_gpu.sh [SHAPE...]   (e.g. llama-3.2-1b llama-3.1-8b)
set -u
budget=${BUDGET_S:-570}
OUT=${OUT:-/tmp/grammar_gpu}
mkdir -p "$OUT"
shapes=("${@:-llama-3.1-8b}")
nvidia-smi > "$OUT/nvidia_smi.txt" 2>&1
start=$(date +%s)
source bench/device/build.sh jisu jisu_tests || { echo "build failed"; exit 1; }
echo "built in $(($(date +%s) - start)) s"

filter='Cuda*:*Sampl*:Gemm*:Skinny*:Attention*:DeviceWeight*:EngineDeviceMask*:EngineStructured*'
t0=$(date +%s)
timeout 300 build/jisu_tests --gtest_filter="$filter" > "$OUT/cuda_tests.log" 2>&1
echo "tests rc=$? in $(($(date +%s) - t0)) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/cuda_tests.log" | sort -u | head -40
grep -E 'p_wrong|token_masks' "$OUT/cuda_tests.log" | head -20

for shape in "${shapes[@]}"; do
  t0=$(date +%s)
  left=$((budget - (t0 - start)))
  [ "$left" -gt 60 ] || { echo "bench $shape skipped: ${left} s left"; continue; }
  timeout "$left" build/jisu bench-grammar --device cuda -m models/tiny-llama \
    --step-model "dummy:$shape:bf16" --batch 1,64 -n 64 --rounds 3 --steps 100 --kv-memory 4GiB \
    --json > "$OUT/bench_grammar_$shape.txt" 2>&1
  echo "bench $shape rc=$? in $(($(date +%s) - t0)) s"
  grep -E '^\|' "$OUT/bench_grammar_$shape.txt"
done
