#!/bin/bash
# Skinny GEMM split sweep (measurement hooks JISU_SKINNY_MAX_SPLITS / _PER_SM), b8/b16/b64.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
JISU_SKINNY_REPORT=1 $N bench-gpu --device-sampling --batch 64 --prefill 16 --steps 2 2>&1 | grep -E "skinny N"
{
for r in 1 2; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 8,16,64 --prefill 16
for s in 1 2 4 8; do
echo "== splits<=$s run $r"; JISU_SKINNY_MAX_SPLITS=$s $N bench-gpu --device-sampling --batch 8,16,64 --prefill 16
done
echo "== splits<=8 per_sm 4 run $r"; JISU_SKINNY_PER_SM=4 $N bench-gpu --device-sampling --batch 8,16,64 --prefill 16
done
} > $OUT/bench.log 2>&1
grep -E '^==|%$' $OUT/bench.log | head -80
