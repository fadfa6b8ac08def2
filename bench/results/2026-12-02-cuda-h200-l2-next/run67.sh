#!/bin/bash
# L2 prefetch of the next GEMV's first weights by the last wave (JISU_L2_NEXT_KB), at block end
# or start, against none; three rounds, batch 1/2/8/64.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 $D/jisu_tests --gtest_filter='CudaBackendTest.*' 2>&1 | grep -E "PASSED|FAILED" | tail -3
{
for r in 1 2 3; do
for kb in 0 4096 8192 16384 32768; do
echo "== e$kb run $r"; JISU_L2_NEXT_KB=$kb $N bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
done
for kb in 4096 8192 16384; do
echo "== s$kb run $r"; JISU_L2_AT_START=1 JISU_L2_NEXT_KB=$kb $N bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
done
done
} > $OUT/bench.log 2>&1
python3 bench/gpu_step_summary.py $OUT/bench.log | tee $OUT/summary.txt
