#!/bin/bash
# Engine A/B on 2 physical cores of the device host (AVX-512 VNNI): base 648a2c9 vs new packers.
set -u
D=$PWD/build-dev/cpu; mkdir -p $D; tar xJf build-dev/cpu.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
$D/jisu make-model --config build-dev/smol/config.json --type q4_1 -o /tmp/smol.gguf > /dev/null 2>&1
C1=$(lscpu -p=CPU,CORE | grep -v "^#" | awk -F, 'NR==1{c=$2} $2!=c{print $1; exit}'); CORES=0,${C1:-1}
echo "cores $CORES"
{
for r in 1 2 3 4 5 6 7; do
for b in jisu_base jisu; do
echo "== $b decode-heavy round $r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"; taskset -c $CORES $D/$b bench-engine -m /tmp/smol.gguf -c 1,8,32 -t 2 --shared-prefix 0 -p 16 -n 256 2>&1 | grep '^| [0-9]'
done; done
for r in 1 2 3; do
for b in jisu_base jisu; do
echo "== $b default round $r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"; taskset -c $CORES $D/$b bench-engine -m /tmp/smol.gguf -c 1,8,32 -t 2 --shared-prefix 0 2>&1 | grep '^| [0-9]'
done; done
} > $OUT/bench.log 2>&1
cat $OUT/bench.log
