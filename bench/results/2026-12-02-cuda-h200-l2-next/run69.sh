#!/bin/bash
# GEMV chain with a two-level grid barrier (+ nanosleep), coherent vs read-only x loads.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
for m in 3 4; do
echo "tests chain $m:"; JISU_GEMV_CHAIN=$m timeout 120 $D/jisu_tests --gtest_filter='CudaBackendTest.*' > $OUT/tests$m.log 2>&1; echo "rc=$?"; grep -E "PASSED|FAILED" $OUT/tests$m.log | tail -4
done
{
for r in 1 2 3; do
for m in 0 2 3 4; do
echo "== chain$m run $r"; JISU_GEMV_CHAIN=$m timeout 60 $N bench-gpu --device-sampling --batch 1,2 --prefill 16
done
for m in 2 3; do
echo "== chain${m}nc run $r"; JISU_CHAIN_NC=1 JISU_GEMV_CHAIN=$m timeout 60 $N bench-gpu --device-sampling --batch 1,2 --prefill 16
done
done
} > $OUT/bench.log 2>&1
python3 bench/gpu_step_summary.py $OUT/bench.log | tee $OUT/summary.txt
