#!/bin/bash
# Batch-1/2 decode: key chunk size (explicit --attn-chunk) against the automatic 128, three rounds.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
timeout 100 $D/jisu_tests --gtest_filter='AttentionChunks*:CudaBackendTest.Flash*:CudaBackendTest.LogitsMatchCpuWithSplitKeys' 2>&1 | grep -E "PASSED|FAILED" | tail -3
{
for r in 1 2 3; do
for c in 0 64 80 96 112 256; do
echo "== c$c run $r"; $N bench-gpu --device-sampling --attn-chunk $c --batch 1,2 --prefill 16
done
echo "== c64v7 run $r"; $N bench-gpu --device-sampling --attn-chunk 64 --decode-variant 7 --batch 1,2 --prefill 16
done
} > $OUT/bench.log 2>&1
grep -E '^==|%$' $OUT/bench.log | awk '/^==/{h=$0; next} {printf "%s | %s %s\n", h, $1, $2}' > $OUT/summary.txt
python3 - $OUT/summary.txt <<'PY'
import sys,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    h,rest=l.rsplit('|',1); cfg=h.replace('==','').strip(); cfg=cfg[:cfg.rfind(' run')] if ' run' in cfg else cfg
    b,ms=rest.split(); d[(cfg,int(b))].append(float(ms))
for c in sorted(set(c for c,_ in d)):
    print(f"{c:12s}", "  ".join(f"b{b}: "+"/".join(f"{v:.3f}" for v in d[(c,b)]) for b in (1,2,4,8,16,24,32,48,64,256) if (c,b) in d))
PY
