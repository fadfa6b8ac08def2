#!/bin/bash
set -u
for v in bins; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu
{
for r in 1 2; do
for c in 0 256; do
for v in 0 6 7; do
echo "== variant $v chunk $c run $r"; $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --decode-variant $v --attn-chunk $c
done; done
echo "== ablate attn run $r"; JISU_ABLATE=attn $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
done
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -120
