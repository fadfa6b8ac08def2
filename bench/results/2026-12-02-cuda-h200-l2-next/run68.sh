#!/bin/bash
# GEMV chain (one persistent grid for o -> gate/up -> down [-> next QKV], grid barriers) at
# batch 1/2: CUDA backend tests in each mode, then three rounds alternating the modes.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for m in 2 3 4; do
echo "tests chain $m:"; JISU_GEMV_CHAIN=$m timeout 120 $D/jisu_tests --gtest_filter='CudaBackendTest.*' > $OUT/tests$m.log 2>&1; echo "rc=$?"; grep -E "PASSED|FAILED" $OUT/tests$m.log | tail -4
done
{
for r in 1 2 3; do
for m in 0 2 3 4; do
echo "== chain$m run $r"; JISU_GEMV_CHAIN=$m timeout 60 $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
done
done
} > $OUT/bench.log 2>&1
python3 bench/gpu_step_summary.py $OUT/bench.log | tee $OUT/summary.txt
tail -5 $OUT/bench.log
