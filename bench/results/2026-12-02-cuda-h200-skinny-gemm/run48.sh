#!/bin/bash
# Skinny GEMM with cluster (DSMEM) split-k reduction: tests, memcheck, A/B/C alternating.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
timeout 200 $D/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*:CudaSkinny*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -8
timeout 120 compute-sanitizer --tool memcheck $D/jisu_tests --gtest_filter='CudaSkinny*' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -3
{
for r in 1 2; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 8,16,32,64 --prefill 16
echo "== skinny run $r"; $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
echo "== skinny+hint run $r"; JISU_SKINNY_L2HINT=1 $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
done
} > $OUT/bench.log 2>&1
grep -E '^==|%$' $OUT/bench.log | head -60
