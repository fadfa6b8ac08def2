#!/bin/bash
# SASS-level warp stall samples of the decode flash kernel at batch 64, context 1024.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu; NC=/usr/local/cuda/bin/ncu
timeout 300 $NC --section SourceCounters --section WarpStateStats --section SpeedOfLight --kernel-name-base demangled --kernel-name 'regex:FlashAttentionKernel<.int.128, .bool.1' --launch-skip 40 --launch-count 1 -o $OUT/attn_b64 $N bench-gpu --device-sampling --batch 64 --prefill 16 --steps 2 > $OUT/ncu_run.log 2>&1
echo "ncu rc=$?"
$NC --import $OUT/attn_b64.ncu-rep --page source --print-source sass --csv > $OUT/sass.csv 2>&1
echo "sass rc=$? $(wc -l < $OUT/sass.csv) lines"; head -3 $OUT/sass.csv | cut -c1-600
