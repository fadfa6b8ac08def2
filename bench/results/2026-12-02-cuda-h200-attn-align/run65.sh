#!/bin/bash
# After the chunk alignment: decode block shapes again at batch 64/256 (two rounds), then the
# final CUDA tests, memcheck and the issue-6 figures on this build.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
{
for r in 1 2; do
for v in 0 1 2 3 4; do
echo "== v$v run $r"; $N bench-gpu --device-sampling --decode-variant $v --batch 16,64,256 --prefill 16
done; done
} > $OUT/variants.log 2>&1
grep -E '^==|%$' $OUT/variants.log | awk '/^==/{h=$0; next} {printf "%s | %s %s\n", h, $1, $2}' > $OUT/summary.txt
python3 - $OUT/summary.txt <<'PY'
import sys,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    h,rest=l.rsplit('|',1); cfg=h.replace('==','').strip(); cfg=cfg[:cfg.rfind(' run')] if ' run' in cfg else cfg
    b,ms=rest.split(); d[(cfg,int(b))].append(float(ms))
for c in sorted(set(c for c,_ in d)):
    print(f"{c:12s}", "  ".join(f"b{b}: "+"/".join(f"{v:.3f}" for v in d[(c,b)]) for b in (1,2,4,8,16,24,32,48,64,256) if (c,b) in d))
PY
timeout 200 $D/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*:CudaSkinny*:AttentionChunks*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -6; grep -A3 "Failure" $OUT/tests.log | head -12
timeout 200 compute-sanitizer --tool memcheck $D/jisu_tests --gtest_filter='CudaSkinny*:CudaGemm*:CudaBackendTest.SmallDecodeBatchesMatchCpu:CudaBackendTest.MixedBatchEqualsOneAtATime:CudaBackendTest.Flash*' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -3
for r in 1 2; do $N bench-gpu --device-sampling --batch 1,8,64,256 --prefill 512,2048,8192 > $OUT/final$r.log 2>&1; grep -A6 "^decode\|^prefill" $OUT/final$r.log; done
$N bench-gpu --device-sampling --unfused --batch 1 --prefill 16 > $OUT/unfused.log 2>&1; grep -A2 "^decode" $OUT/unfused.log
