#!/bin/bash
# Nsight Compute, full sections, on the decode flash-attention kernel at batch 64, context 1024.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu; NC=/usr/local/cuda/bin/ncu
timeout 300 $NC --set full --import-source no --kernel-name-base demangled --kernel-name 'regex:FlashAttentionKernel<.int.128, .bool.1' --launch-skip 40 --launch-count 2 -o $OUT/attn_b64 $N bench-gpu --device-sampling --batch 64 --prefill 16 --steps 2 > $OUT/ncu_run.log 2>&1
echo "ncu rc=$?"; tail -3 $OUT/ncu_run.log
$NC --import $OUT/attn_b64.ncu-rep --page details > $OUT/attn_b64_details.txt 2>&1
$NC --import $OUT/attn_b64.ncu-rep --page raw --csv > $OUT/attn_b64_raw.csv 2>&1
grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers|Warp Cycles Per Issued|Eligible|Issued Warp|Block Limit" $OUT/attn_b64_details.txt | head -40
