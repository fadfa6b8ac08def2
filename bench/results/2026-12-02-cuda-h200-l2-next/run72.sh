#!/bin/bash
# Warps per unit (KS) of the o and down GEMVs (JISU_O_KS / JISU_DOWN_KS), three rounds.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
JISU_O_KS=4 JISU_DOWN_KS=8 timeout 100 $D/jisu_tests --gtest_filter='CudaBackendTest.*' 2>&1 | grep -E "PASSED|FAILED" | tail -3
{
for r in 1 2 3; do
for cfg in 2,2 2,4 2,8 4,2 8,2 4,4; do
o=${cfg%,*}; d=${cfg#*,}
echo "== o${o}d${d} run $r"; JISU_O_KS=$o JISU_DOWN_KS=$d timeout 60 $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
done
done
} > $OUT/bench.log 2>&1
python3 bench/gpu_step_summary.py $OUT/bench.log | tee $OUT/summary.txt
