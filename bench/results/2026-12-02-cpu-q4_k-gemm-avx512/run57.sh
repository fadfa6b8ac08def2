#!/bin/bash
# CPU side on the device host (AVX-512 VNNI): integer-path tests, Q4_K GEMM (Q4_1 panels, VNNI
# micro-kernel) against the float GEMM, 1 thread and 2 physical cores.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200
timeout 240 $D/jisu_tests --gtest_filter='PackIntPanel*:MatMul*:*Gemv*:ActQuant*:KQuant*:*Quant*:-Cuda*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|SKIPPED|tests rc" $OUT/tests.log | tail -6
$D/jisu info --system 2>&1 | grep -E "matmul isa|q4_k|q4_1"
C1=$(lscpu -p=CPU,CORE | grep -v "^#" | awk -F, 'NR==1{c=$2} $2!=c{print $1; exit}'); CORES=0,${C1:-1}
{
for r in 1 2 3; do
for m in float default; do
if [ $m = float ]; then E="JISU_MATMUL=float"; else E="X=1"; fi
for t in 24 32 128 512; do
echo "== $m round $r tokens $t"
env $E taskset -c 0 $D/jisu bench-matmul --types q4_k --threads 1 --rows 5632 --cols 2048 --tokens $t --iters 20 2>&1 | tail -1
env $E taskset -c $CORES $D/jisu bench-matmul --types q4_k --threads 2 --rows 5632 --cols 2048 --tokens $t --iters 20 2>&1 | tail -1
done; done; done
} > $OUT/bench.log 2>&1
cat $OUT/bench.log | head -80
