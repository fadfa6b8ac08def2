#!/bin/bash
# Branch wip/skinny-n64: per-GEMM Nsight Compute durations at batch 64 and 32, skinny (two tile
# shapes, cluster sizes fitted) against cuBLAS; plus step times.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu; NC=/usr/local/cuda/bin/ncu
for b in 64 32; do
for c in cublas s21 s12; do
case $c in cublas) A="--skinny-tokens 0"; E=X=1;; s21) A="--skinny-tokens 64"; E=JISU_SKINNY_SHAPE=21;; s12) A="--skinny-tokens 64"; E=JISU_SKINNY_SHAPE=12;; esac
env $E timeout 100 $NC --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv $N bench-gpu --device-sampling $A --batch $b --prefill 16 --steps 1 > $OUT/ncu_${c}_b$b.csv 2>/dev/null
echo "ncu $c b$b rc=$?"
done; done
{
for r in 1 2; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 24,32,48,64 --prefill 16
echo "== s21 run $r"; JISU_SKINNY_SHAPE=21 $N bench-gpu --device-sampling --skinny-tokens 64 --batch 24,32,48,64 --prefill 16
echo "== s12 run $r"; JISU_SKINNY_SHAPE=12 $N bench-gpu --device-sampling --skinny-tokens 64 --batch 24,32,48,64 --prefill 16
done
} > $OUT/bench.log 2>&1
grep -E '^==|%$' $OUT/bench.log
