#!/bin/bash
# Decode on the device host's CPU (Sapphire Rapids, AVX-512 VNNI): AVX-512 GEMV / F16 dot reading
# four (two) rows per pass (old, main f92c44c) vs one row (new, adab9f3), alternating, pinned.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
for p in $(find / -name 'libcublasLt.so.13' -not -path '*/proc/*' 2>/dev/null | head -1) $(find / -name 'libcudart.so.13' -not -path '*/proc/*' 2>/dev/null | head -1); do export LD_LIBRARY_PATH=$(dirname $p):$LD_LIBRARY_PATH; done
grep -m1 "model name" /proc/cpuinfo; nproc
$D/jisu-new info --system --no-membw 2>&1 | grep -E "matmul isa|q4_0|q8_0|f16 " | tee $OUT/info.txt
taskset -c 0 $D/jisu-new info --membw 2>&1 | tail -2 | tee -a $OUT/info.txt
for q in q4_0 q8_0 f16; do $D/jisu-new make-model --shape tinyllama-1.1b --type $q --seed 1 -o /tmp/tl-$q.gguf > /dev/null 2>&1; done
for r in 1 2 3; do for q in q4_0 q8_0 f16; do for c in "0 1" "0,1 2"; do set -- $c; for b in old new; do
echo "r$r $q t$2 $b $(taskset -c $1 $D/jisu-$b bench -m /tmp/tl-$q.gguf -t $2 -p 16 -n 64 -r 2 2>&1 | grep tg | awk -F'|' '{print $6}')"
done; done; done; done | tee $OUT/decode.txt
