#!/bin/bash
# Q6_K integer GEMM (branch wip/q6k-gemm) on the device host's AVX-512 VNNI CPU: the
# integer-path suites, then bench-matmul q6_k float vs integer on one core, three rounds.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
$N info --system 2>&1 | grep -E "matmul isa|q5_k|q6_k"
taskset -c 0,1 $D/jisu_tests --gtest_filter='MatMulIntTest.*:PackIntPanel*:IntKQuant*:MatMulTest.*' > $OUT/tests.log 2>&1; echo "tests rc=$?"
grep -E "PASSED|FAILED|SKIPPED|Failure" $OUT/tests.log | tail -6; grep -A3 Failure $OUT/tests.log | head -8
for r in 1 2 3; do for m in float default; do for t in 32 128 512; do
echo -n "r$r $m t$t "; JISU_MATMUL=$m taskset -c 0 $N bench-matmul --types q5_k,q6_k --threads 1 --rows 5632 --cols 2048 --tokens $t --iters 6 2>&1 | tail -2 | awk '{printf "%s %s  ", $1, $4}'; echo
done; done; done | tee $OUT/matmul.txt
