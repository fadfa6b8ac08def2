#!/bin/bash
set -u
for v in bins; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu
{
for r in 1 2 3; do
for a in none combine,notrigger notrigger attn; do
echo "== ablate $a run $r"; JISU_ABLATE=$a $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
echo "== ablate $a v7 run $r"; JISU_ABLATE=$a $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --decode-variant 7
done; done
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -150
