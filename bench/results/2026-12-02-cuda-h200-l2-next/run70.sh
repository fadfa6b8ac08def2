#!/bin/bash
# Batch-1/2 decode step against the context length (main build), three rounds.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
{
for r in 1 2 3; do
for ctx in 128 512 1024 2048 4096; do
echo "== ctx$ctx run $r"; timeout 60 $N bench-gpu --device-sampling --context $ctx --batch 1,2 --prefill 16
done
done
} > $OUT/bench.log 2>&1
python3 bench/gpu_step_summary.py $OUT/bench.log | tee $OUT/summary.txt
grep -B2 -A4 "^decode" $OUT/bench.log | head -12
