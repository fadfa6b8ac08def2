#!/bin/bash
# Decode items merge their own key chunks (no combine kernel for decode tokens): CUDA tests,
# memcheck, base/new alternating benches.
set -u
for v in bins base; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu; B=$PWD/build-dev/base/jisu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 200 build-dev/bins/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -5
timeout 150 compute-sanitizer --tool memcheck build-dev/bins/jisu_tests --gtest_filter='CudaBackendTest.AttentionCombineOverManyChunks:CudaBackendTest.SmallDecodeBatchesMatchCpu' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -3
{
for r in 1 2 3; do
echo "== base run $r"; $B bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
echo "== new run $r"; $N bench-gpu --device-sampling --batch 1,2,8,64 --prefill 16
done
echo "== new final"; $N bench-gpu --device-sampling --batch 1,2,8,64,256 --prefill 512,2048
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -80
