#!/bin/bash
# AMX-INT8 kernels (src/ops/matmul_amx.cc) on the H200 machine's Xeon: the kernel tests, the
# matrix products with AMX on and off (JISU_AMX=0) and the engine's c=1/8/32 at 2 threads.
# Run from the repository root with build-deps/ carried (bench/device/deps.sh).
set -u
t0=$SECONDS
D=bench/results/2026-12-04-engine-ratio-h200-host
source bench/device/build.sh jisu jisu_tests || exit 1
echo "build: $((SECONDS - t0)) s"
J=build/jisu
build/jisu info --system --no-membw 2>&1 | grep -E "q4_1|q8_0|isa features"
timeout 300 build/jisu_tests --gtest_filter='AmxIlDot*:MatMulIntTest.*:MatMul*Interleav*:MatMulMany*' > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|tests ran" $OUT/tests.log | head
[ -f /tmp/smol.gguf ] || $J make-model --config $D/smollm2-135m-config.json --type q4_1 --seed 1 -o /tmp/smol.gguf > /dev/null
{
for shape in "1536 576" "576 1536" "576 576"; do
  set -- $shape
  for tok in 8 16 32 64 512; do
    for amx in 0 1; do
      echo "== q4_1 $1x$2 tokens $tok amx $amx"
      JISU_AMX=$amx $J bench-matmul --types q4_1 --threads 1,2 --rows $1 --cols $2 --tokens $tok --interleave --mib 64 --iters 200 | tail -2
    done
  done
done
for amx in 0 1; do
  echo "== q8_0 49152x576 tokens 32 amx $amx"
  JISU_AMX=$amx $J bench-matmul --types q8_0 --threads 1,2 --rows 49152 --cols 576 --tokens 32 --interleave --iters 30 | tail -2
done
for r in 1 2 3; do
  for amx in 0 1; do
    echo "== engine t2 amx $amx run $r"
    JISU_AMX=$amx timeout 60 $J bench-engine -m /tmp/smol.gguf -c 1,8,32 -p 16 -n 128 -t 2 --shared-prefix 0
  done
done
for amx in 0 1; do
  echo "== bench pp512 t2 amx $amx"
  JISU_AMX=$amx timeout 60 $J bench -m /tmp/smol.gguf -p 512 -n 0 -t 2
done
} > $OUT/bench.log 2>&1
grep -E "^== |^q4_1|^q8_0|^\| (1|8|32) |pp512|tok/s" $OUT/bench.log | head -150
echo "end: $((SECONDS - t0)) s"
