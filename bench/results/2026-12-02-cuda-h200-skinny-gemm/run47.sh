#!/bin/bash
# Skinny tensor-core GEMM (3..64 tokens): CUDA tests + memcheck, then A/B in one binary
# (--skinny-tokens 0 = cuBLAS as before), alternating.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 200 $D/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*:CudaSkinny*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -8
timeout 120 compute-sanitizer --tool memcheck $D/jisu_tests --gtest_filter='CudaSkinny*:CudaBackendTest.SmallDecodeBatchesMatchCpu' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -3
{
for r in 1 2; do
echo "== cublas run $r"; $N bench-gpu --device-sampling --skinny-tokens 0 --batch 8,16,32,64 --prefill 16
echo "== skinny run $r"; $N bench-gpu --device-sampling --batch 8,16,32,64 --prefill 16
done
echo "== skinny profile"; $N bench-gpu --device-sampling --profile --batch 64 --prefill 16 --steps 10
echo "== cublas profile"; $N bench-gpu --device-sampling --profile --skinny-tokens 0 --batch 64 --prefill 16 --steps 10
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -60
grep -iE "gemm" $OUT/bench.log | head -30
