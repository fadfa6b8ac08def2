#!/bin/bash
# CPU-side checks on the device host (AVX-512 there): packer tests, engine A/B on 2 cores.
set -u
D=$PWD/build-dev/cpu; mkdir -p $D; tar xJf build-dev/cpu.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
{ lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket|L2|L3"; grep -o 'avx512[a-z_0-9]*\|amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; lscpu -e | head -20; } > $OUT/cpu.txt 2>&1
cat $OUT/cpu.txt | head -12
timeout 200 $D/jisu_tests --gtest_filter='PackIntPanel*:MatMulInt*:MatMulTest*:*Gemv*:ActQuant*:*Attention*:-Cuda*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|SKIPPED|tests rc" $OUT/tests.log | tail -8
$D/jisu make-model --config build-dev/smol/config.json --type q4_1 -o /tmp/smol.gguf > /dev/null 2>&1
$D/jisu info --system 2>&1 | head -20 > $OUT/info.txt
C1=$(lscpu -p=CPU,CORE | grep -v "^#" | awk -F, 'NR==1{c=$2} $2!=c{print $1; exit}'); CORES=0,${C1:-1}; echo "cores $CORES" | tee -a $OUT/cpu.txt
{
for r in 1 2 3; do
for b in jisu_base jisu; do
echo "== $b round $r"; taskset -c $CORES $D/$b bench-engine -m /tmp/smol.gguf -c 1,8,32 -t 2 --shared-prefix 0 -p 16 -n 256 2>&1 | grep '^| [0-9]'
done; done
for b in jisu_base jisu; do
echo "== $b matmul"; taskset -c 0 $D/$b bench-matmul --types q4_1,q8_0 --threads 1 --rows 1536 --cols 576 --tokens 32 --iters 300 --mib 1 2>&1 | tail -2
done
} > $OUT/bench.log 2>&1
cat $OUT/bench.log
