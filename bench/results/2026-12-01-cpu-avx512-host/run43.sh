#!/bin/bash
# CPU-side checks on the device host (Sapphire Rapids, AVX-512 VNNI): ops tests, K-quant decode
# int vs float, packer and engine A/B on 2 physical cores.
set -u
D=$PWD/build-dev/cpu; mkdir -p $D; tar xJf build-dev/cpu.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
timeout 240 $D/jisu_tests --gtest_filter='PackIntPanel*:MatMul*:*Gemv*:ActQuant*:*Attention*:*Quant*:*Elementwise*:*KvCache*:-Cuda*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|SKIPPED|tests rc" $OUT/tests.log | tail -8
$D/jisu info --system 2>&1 | grep -E "q4_k|q5_k|q6_k"
{
for r in 1 2 3; do
for m in float default; do
echo "== kquant $m round $r"
if [ $m = float ]; then E="JISU_MATMUL=float"; else E="X=1"; fi
for t in 1 4 12; do env $E taskset -c 0 $D/jisu bench-matmul --types q4_k,q6_k --threads 1 --rows 5632 --cols 2048 --tokens $t --iters 100 2>&1 | tail -2; done
done; done
} > $OUT/kquant.log 2>&1
grep -E "^==|^q" $OUT/kquant.log
$D/jisu make-model --config build-dev/smol/config.json --type q4_1 -o /tmp/smol.gguf > /dev/null 2>&1
C1=$(lscpu -p=CPU,CORE | grep -v "^#" | awk -F, 'NR==1{c=$2} $2!=c{print $1; exit}'); CORES=0,${C1:-1}
{
for r in 1 2 3 4 5; do
for b in jisu_base jisu; do
echo "== $b round $r"; taskset -c $CORES $D/$b bench-engine -m /tmp/smol.gguf -c 1,32 -t 2 --shared-prefix 0 -p 16 -n 256 2>&1 | grep '^| [0-9]'
done; done
for r in 1 2 3; do for b in jisu_base jisu; do
echo "== $b matmul $r"; taskset -c 0 $D/$b bench-matmul --types q4_1,q8_0 --threads 1 --rows 1536 --cols 576 --tokens 32 --iters 500 --mib 1 2>&1 | tail -2
done; done
} > $OUT/bench.log 2>&1
cat $OUT/bench.log
