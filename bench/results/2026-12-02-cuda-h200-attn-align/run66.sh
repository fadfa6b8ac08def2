#!/bin/bash
# Attention combine as a programmatic dependent of the attention kernel: tests, then base /
# new / new with JISU_COMBINE_PDL=0, three rounds alternating, context 1024.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu; xz -dkc build-dev/jisu-base.xz > $D/jisu-base; chmod +x $D/jisu-base; B=$D/jisu-base
timeout 200 $D/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*:CudaSkinny*:AttentionChunks*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -6; grep -A3 "Failure" $OUT/tests.log | head -12
{
for r in 1 2 3; do
echo "== base run $r"; $B bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
echo "== new run $r"; $N bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
echo "== newoff run $r"; JISU_COMBINE_PDL=0 $N bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
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
timeout 120 compute-sanitizer --tool memcheck $D/jisu_tests --gtest_filter='CudaBackendTest.AttentionCombine*:CudaBackendTest.LogitsMatchCpuWithSplitKeys:CudaBackendTest.SmallDecodeBatchesMatchCpu' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -3
