#!/bin/bash
# Issue 4's c32/c1 throughput ratio on the H200 machine of the `device` tool: its host CPU at 2
# threads (and at 16), and the GPU. The bundled GGUF (98 MB) is over the 64 MiB a call carries,
# so a file of the same shape and types is made there: SmolLM2-135M's config.json (this
# folder), random Q4_1 weights, output head Q8_0 (`jisu make-model`; same bytes a token, same
# kernels). Run from the repository root with build-deps/ carried (bench/device/deps.sh).
set -u
t0=$SECONDS
D=bench/results/2026-12-04-engine-ratio-h200-host
grep -m1 'model name' /proc/cpuinfo; nproc; lscpu > $OUT/lscpu.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
source bench/device/build.sh jisu || exit 1
echo "build: $((SECONDS - t0)) s"
J=build/jisu
$J info --system --no-membw 2>&1 | head -30
$J info --membw -t 2 --membw-mib 1024
$J info --membw -t 16 --membw-mib 1024
$J make-model --config $D/smollm2-135m-config.json --type q4_1 --seed 1 -o /tmp/smol.gguf || exit 1
M=/tmp/smol.gguf
B="-c 1,8,32 -p 16 -n 128 --shared-prefix 0 --json"
{
for r in 1 2 3; do
  echo "== cpu t2 run $r"; timeout 60 $J bench-engine -m $M $B -t 2
  echo "== cuda run $r"; timeout 60 $J bench-engine -m $M $B --device cuda
done
for r in 1 2; do echo "== cpu t16 run $r"; timeout 60 $J bench-engine -m $M $B -t 16; done
echo "== matmul q4_1 32 tokens"
$J bench-matmul --types q4_1 --threads 1,2 --rows 1536 --cols 576 --tokens 32 --interleave --mib 16 --iters 500
echo "== matmul q4_1 1 token"
$J bench-matmul --types q4_1 --threads 1,2 --rows 1536 --cols 576 --tokens 1 --interleave --mib 512 --iters 500
} > $OUT/bench.log 2>&1
grep -E "^== |^\| (1|8|32) |GB/s|avx512" $OUT/bench.log | grep -v '^{' | head -80
echo "end: $((SECONDS - t0)) s"
