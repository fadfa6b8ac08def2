#!/bin/bash
set -u
for v in bins; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu
timeout 300 build-dev/bins/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc|OK \]" $OUT/tests.log | tail -40
{
for r in 1 2 3; do
echo "== cluster run $r"; $N bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
echo "== combine run $r"; $N bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16 --no-cluster-merge
echo "== cluster v7 run $r"; $N bench-gpu --device-sampling --batch 1,2,8 --prefill 16 --decode-variant 7
done
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -150
timeout 200 compute-sanitizer --tool memcheck build-dev/bins/jisu_tests --gtest_filter='CudaBackendTest.SmallDecodeBatchesMatchCpu:CudaBackendTest.FlashAttentionMatchesCpuHead128Group4:CudaBackendTest.FlashDecodeVariantsMatchCpu' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -5
