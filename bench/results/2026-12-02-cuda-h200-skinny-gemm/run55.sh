#!/bin/bash
# Skinny GEMM tile shapes (hook JISU_SKINNY_SHAPE: H m64 halves x A 64-k atoms a stage).
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
for sh in 14 144 124; do echo "shape $sh: $(JISU_SKINNY_SHAPE=$sh timeout 100 $D/jisu_tests --gtest_filter='CudaSkinny*' 2>&1 | grep -E 'PASSED|FAILED' | tail -2 | tr '\n' ' ')"; done
{
for r in 1 2 3; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 4,8,16,24,32 --prefill 16
for sh in 12 22 14 144 124; do
echo "== shape $sh run $r"; JISU_SKINNY_SHAPE=$sh $N bench-gpu --device-sampling --batch 4,8,16,24,32 --prefill 16
done
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
    print(f"{c:22s}", "  ".join(f"b{b}: "+"/".join(f"{v:.3f}" for v in d[(c,b)]) for b in (4,8,16,24,32)))
PY
