#!/bin/bash
# wgmma skinny GEMM (no L2 hint): tests, then Nsight Compute of the b64 step (every kernel's
# time and DRAM bytes) and full sections for one layer's four skinny GEMMs.
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu; NC=/usr/local/cuda/bin/ncu
timeout 200 $D/jisu_tests --gtest_filter='CudaBackend*:CudaGemm*:CudaSampling*:CudaSkinny*' > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $OUT/tests.log
grep -E "FAILED|PASSED|tests rc" $OUT/tests.log | tail -8
grep -A3 "Failure" $OUT/tests.log | head -12
timeout 100 $NC --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv $N bench-gpu --device-sampling --batch 64 --prefill 16 --steps 1 > $OUT/ncu_b64.csv 2>$OUT/ncu_b64.err
echo ncu rc=$?
timeout 150 $NC --clock-control none --cache-control none --set full --kernel-name-base demangled --kernel-name "regex:SkinnyGemmKernel<64>" --launch-skip 8 --launch-count 4 -o $OUT/skinny64 $N bench-gpu --device-sampling --batch 64 --prefill 16 --steps 1 > $OUT/ncu_full.log 2>&1
echo ncu full rc=$?
$NC --import $OUT/skinny64.ncu-rep --page details > $OUT/skinny64.txt 2>&1
grep -E "Duration|DRAM Throughput|Grid Size|Achieved Occupancy|Registers Per|Block Limit" $OUT/skinny64.txt | head -40
