#!/bin/bash
# Final skinny GEMM (wgmma, 64 x 128 tiles, <= 16 tokens): CUDA tests, memcheck, alternating
# A/B against cuBLAS (--skinny-tokens 0), and the issue-6 figures.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 $D/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*:CudaSkinny*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -6; grep -A3 "Failure" $OUT/tests.log | head -12
timeout 150 compute-sanitizer --tool memcheck $D/jisu_tests --gtest_filter='CudaSkinny*:CudaBackendTest.SmallDecodeBatchesMatchCpu:CudaBackendTest.MixedBatchEqualsOneAtATime' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -3
{
for r in 1 2 3; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 1,2,4,8,16,64 --prefill 16
echo "== skinny run $r"; $N bench-gpu --device-sampling --batch 1,2,4,8,16,64 --prefill 16
done
echo "== final default"; $N bench-gpu --device-sampling --batch 1,8,16,64,256 --prefill 512,2048
} > $OUT/bench.log 2>&1
grep -E '^==|%$' $OUT/bench.log | awk '/^==/{h=$0; next} {printf "%s | %s %s\n", h, $1, $2}' > $OUT/summary.txt
python3 - $OUT/summary.txt <<'PY'
import sys,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    h,rest=l.rsplit('|',1); cfg=h.replace('==','').strip(); cfg=cfg[:cfg.rfind(' run')] if ' run' in cfg else cfg
    b,ms=rest.split(); d[(cfg,int(b))].append(float(ms))
for c in sorted(set(c for c,_ in d)):
    print(f"{c:16s}", "  ".join(f"b{b}: "+"/".join(f"{v:.3f}" for v in d[(c,b)]) for b in (1,2,4,8,16,64,256) if (c,b) in d))
PY
grep -A4 "^prefill" $OUT/bench.log | tail -4
