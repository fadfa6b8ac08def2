#!/bin/bash
# Follow-up of run75 (same binaries): F16 and Q8_0 decode, old vs new, more rounds, shorter runs.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; [ -x $D/jisu-new ] || tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
for p in $(find / -name 'libcublasLt.so.13' -not -path '*/proc/*' 2>/dev/null | head -1) $(find / -name 'libcudart.so.13' -not -path '*/proc/*' 2>/dev/null | head -1); do export LD_LIBRARY_PATH=$(dirname $p):$LD_LIBRARY_PATH; done
for q in q8_0 f16; do [ -f /tmp/tl-$q.gguf ] || $D/jisu-new make-model --shape tinyllama-1.1b --type $q --seed 1 -o /tmp/tl-$q.gguf > /dev/null 2>&1; done
for r in 1 2 3 4; do for q in f16 q8_0; do for c in "0 1" "0,1 2"; do set -- $c; for b in old new; do
echo "r$r $q t$2 $b $(taskset -c $1 $D/jisu-$b bench -m /tmp/tl-$q.gguf -t $2 -p 8 -n 24 -r 1 2>&1 | grep tg | awk -F'|' '{print $6}')"
done; done; done; done | tee $OUT/decode2.txt
