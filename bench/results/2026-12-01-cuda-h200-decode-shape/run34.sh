#!/bin/bash
set -u
for v in bins; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu
{
for r in 1 2 3; do
for v in 0 7; do
echo "== v$v pf-o run $r"; $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --decode-variant $v
echo "== v$v no-pf run $r"; JISU_ATTN_PF_O=0 $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --decode-variant $v
done; done
echo "== ablate attn"; JISU_ABLATE=attn $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -120
