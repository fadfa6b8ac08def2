#!/bin/bash
# On the device machine, after `source bench/device/build.sh jisu jisu_tests`: racecheck over
# the CUDA tests one process per test, several at once, with a table of what each gave
# (issue 37 item 4):
#   bash bench/device/racecheck_tests.sh [SECONDS-PER-TEST] [GTEST-FILTER] [PARALLEL]
# TOTAL=SECONDS stops the whole sweep then (the table marks the tests it did not reach).
# Why one process per test: a test whose steps reach cuBLASLt's Hopper kernels (nvjet_*) stops
# the whole run. racecheck reports hazards inside them (they synchronize shared memory with
# asynchronous barriers it does not model), and checking only our kernels (--kernel-name
# kns=jisu) makes the sanitizer fail on a hardware exception inside the unchecked cuBLASLt
# kernel (error 13; compute-sanitizer 2025.3.1, H100, 2026-12-06). Per test, those stop only
# themselves and the table says which tests ran through clean. Logs: $OUT/racecheck/.
secs=${1:-240}
filter=${2:-'Cuda*:*Sampl*:Gemm*:Skinny*:Attention*:DeviceWeight*:EngineDeviceMask*:EngineStructured*'}
par=${3:-6}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "no compute-sanitizer"; exit 1; }
"$cs" --version | tail -1
out=${OUT:-/tmp}/racecheck
mkdir -p "$out"
build/jisu_tests --gtest_list_tests --gtest_filter="$filter" |
  awk '/^[^ ]/ {suite=$1} /^  / && $1 !~ /^DISABLED_/ {print suite $1}' > "$out/tests.txt"
export cs secs out
timeout "${TOTAL:-86400}" xargs -P "$par" -I{} bash -c 'timeout --signal=INT "$secs" "$cs" --tool racecheck \
  --racecheck-report all --kernel-name kns=jisu --error-exitcode 99 build/jisu_tests \
  --gtest_filter="{}" > "$out/{}.log" 2>&1; true' < "$out/tests.txt"
while read -r t; do
  log=$out/$t.log
  [ -f "$log" ] || { printf '%-72s %s\n' "$t" "not run (TOTAL reached)"; continue; }
  if grep -q '^\[       OK' "$log" && grep -q 'RACECHECK SUMMARY: 0 hazards' "$log"; then
    verdict="clean"
  elif grep -q '^\[       OK' "$log" && grep -q 'terminated before first instrumented API call' "$log"; then
    verdict="clean (no GPU work)"
  elif grep -q 'Internal Sanitizer Error' "$log"; then
    verdict="not checked: sanitizer failed inside an unchecked kernel$(grep -q cublasLt "$log" && echo ' (cuBLASLt)')"
  elif grep -q '^\[  SKIPPED' "$log"; then
    verdict="skipped"
  elif ! grep -q 'RACECHECK SUMMARY' "$log"; then
    verdict="did not finish in ${secs}s"
  else
    verdict="$(grep -m1 'RACECHECK SUMMARY' "$log" | sed 's/=* *//'), test $(grep -q '^\[       OK' "$log" && echo ok || echo failed)"
  fi
  printf '%-72s %s\n' "$t" "$verdict"
done < "$out/tests.txt" > "$out/table.txt"
cat "$out/table.txt"
echo "racecheck: $(grep -c ' clean' "$out/table.txt") of $(wc -l < "$out/tests.txt") tests ran through with 0 hazards"
