#!/bin/bash
# The whole CPU test suite on the AVX-512 host (CUDA suites excluded; they ran in run41).
set -u
D=$PWD/build-dev/cpu; mkdir -p $D; tar xJf build-dev/cpu.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
timeout 500 $D/jisu_tests --gtest_filter='-Cuda*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "^\[  FAILED|PASSED|SKIPPED \]|tests rc" $OUT/tests.log | head -40
