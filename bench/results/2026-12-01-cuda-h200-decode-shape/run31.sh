#!/bin/bash
set -u
for v in bins base; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
cp build-dev/bins/*.so* build-dev/base/ 2>/dev/null
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu; B=$PWD/build-dev/base/jisu
timeout 300 build-dev/bins/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -8
{
for r in 1 2 3; do
echo "== base run $r"; $B bench-gpu --device-sampling --batch 1,2,64 --prefill 16
echo "== new run $r"; $N bench-gpu --device-sampling --batch 1,2,64 --prefill 16
echo "== new-noattnpdl run $r"; JISU_ATTN_PDL=0 $N bench-gpu --device-sampling --batch 1,2,64 --prefill 16
echo "== new-noxpf run $r"; JISU_GEMV_XPF=0 $N bench-gpu --device-sampling --batch 1,2,64 --prefill 16
done
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -80
timeout 200 compute-sanitizer --tool memcheck build-dev/bins/jisu_tests --gtest_filter='CudaBackendTest.LogitsMatchCpuWithSplitKeys:CudaBackendTest.AttentionCombineOverManyChunks:CudaBackendTest.MixedBatchEqualsOneAtATime:CudaBackendTest.SmallDecodeBatchesMatchCpu:CudaBackendTest.FlashDecodeVariantsMatchCpu' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -5
