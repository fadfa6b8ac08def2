#!/bin/bash
# Skinny GEMM: L2 prefetch distance x max splits sweep (measurement hooks), b8/b16/b32/b64.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
timeout 100 $D/jisu_tests --gtest_filter='CudaSkinny*' 2>&1 | grep -E "PASSED|FAILED" | tail -3
{
for r in 1 2; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 8,16,32,64 --prefill 16
for p in 0 2 4 8 16; do for s in 4 8; do
echo "== prefetch $p splits<=$s run $r"; JISU_SKINNY_PREFETCH=$p JISU_SKINNY_MAX_SPLITS=$s $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
done; done
done
} > $OUT/bench.log 2>&1
grep -E '^==|%$' $OUT/bench.log | awk '/^==/{h=$0; next} {printf "%s | %s %s\n", h, $1, $2}' > $OUT/summary.txt
python3 - $OUT/summary.txt <<'PY'
import sys,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    h,rest=l.rsplit('|',1); cfg=h.replace('==','').strip(); cfg=cfg[:cfg.rfind(' run')]
    b,ms=rest.split(); d[(cfg,int(b))].append(float(ms))
cfgs=sorted(set(c for c,_ in d), key=lambda c:(c!='cublas',c))
for c in cfgs:
    print(f"{c:28s}", "  ".join(f"b{b}: "+"/".join(f"{v:.3f}" for v in d[(c,b)]) for b in (8,16,32,64)))
PY
