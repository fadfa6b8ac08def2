#!/bin/bash
set -u
for v in bins base; do D=$PWD/build-dev/$v; mkdir -p $D; tar xJf build-dev/$v.tar.xz -C $D; done
export LD_LIBRARY_PATH=$PWD/build-dev/bins:${LD_LIBRARY_PATH:-}
N=$PWD/build-dev/bins/jisu; B=$PWD/build-dev/base/jisu
timeout 300 build-dev/bins/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -5
{
for r in 1 2 3 4; do
echo "== head run $r"; $B bench-gpu --device-sampling --batch 1,2 --prefill 16
echo "== rope-early run $r"; $N bench-gpu --device-sampling --batch 1,2 --prefill 16
done
} > $OUT/bench.log 2>&1
grep -E '^==|^ +[0-9]+ +[0-9.]+ +[0-9]' $OUT/bench.log | grep -v '^    16 ' | head -150
