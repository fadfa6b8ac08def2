#!/bin/bash
# Skinny GEMM: cluster sizes that fit in one wave (FittingSplits), stages 3 vs 4 (hooks).
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
timeout 100 $D/jisu_tests --gtest_filter='CudaSkinny*' 2>&1 | grep -E "PASSED|FAILED" | tail -3
JISU_SKINNY_REPORT=1 $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16 --steps 2 2>&1 | grep -E "skinny N"
JISU_SKINNY_REPORT=1 JISU_SKINNY_STAGES=3 $N bench-gpu --device-sampling --batch 32,64 --prefill 16 --steps 2 2>&1 | grep -E "skinny N"
{
for r in 1 2 3; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 8,16,32,64 --prefill 16
echo "== fit4 run $r"; $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
echo "== fit3 run $r"; JISU_SKINNY_STAGES=3 $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
echo "== nofit4 run $r"; JISU_SKINNY_NOFIT=1 $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
echo "== fit4 split<=4 run $r"; JISU_SKINNY_MAX_SPLITS=4 $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
echo "== fit3 per_sm3 run $r"; JISU_SKINNY_STAGES=3 JISU_SKINNY_PER_SM=3 $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
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
    print(f"{c:22s}", "  ".join(f"b{b}: "+"/".join(f"{v:.3f}" for v in d[(c,b)]) for b in (8,16,32,64)))
PY
