#!/bin/bash
set -u
for v in bins; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu
{
for r in 1 2; do
echo "== default run $r"; $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
for c in 25 50 100; do
echo "== gemv $c run $r"; JISU_GEMV_CARVEOUT=$c $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
echo "== gemv+attn $c run $r"; JISU_GEMV_CARVEOUT=$c JISU_ATTN_CARVEOUT=$c $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
done
echo "== v7 default run $r"; $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --decode-variant 7
echo "== v7 gemv+attn 100 run $r"; JISU_GEMV_CARVEOUT=100 JISU_ATTN_CARVEOUT=100 $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --decode-variant 7
done
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -150
