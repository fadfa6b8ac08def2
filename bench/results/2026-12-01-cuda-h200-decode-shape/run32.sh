#!/bin/bash
set -u
for v in bins base; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu; B=$PWD/build-dev/base/jisu
export JISU_GEMV_XPF=0
{
for r in 1 2 3; do
echo "== base run $r"; $B bench-gpu --device-sampling --batch 1,64 --prefill 16
echo "== new run $r"; $N bench-gpu --device-sampling --batch 1,64 --prefill 16
echo "== new-nol2pf run $r"; JISU_ATTN_L2PF=0 $N bench-gpu --device-sampling --batch 1,64 --prefill 16
echo "== new-nol2pf-nopdl run $r"; JISU_ATTN_L2PF=0 JISU_ATTN_PDL=0 $N bench-gpu --device-sampling --batch 1,64 --prefill 16
done
for r in 1 2; do
for a in none attn combine qkv oproj gateup down lmhead sampler; do
echo "== ablate $a run $r"; JISU_ABLATE=$a $N bench-gpu --device-sampling --batch 1 --prefill 16
done; done
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -120
