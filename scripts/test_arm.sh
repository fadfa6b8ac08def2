#!/usr/bin/env bash
# The Arm stage of scripts/test.sh: cross-builds the test binary for AArch64 (cmake/
# aarch64-linux-gnu.cmake; compiler and arm64 libraries from scripts/setup.sh) and runs the
# tests under qemu-user. "-cpu max" has the dot-product extension, so the default kernels are
# the SDOT ones; the matmul tests force the plain NEON ones too (Isa::kNeon), and a short second
# run on a CPU model without SDOT checks that detection falls back to them. Emulated, so
# nothing here says how fast the kernels are on real Arm hardware.
#   bash scripts/test_arm.sh          CI's set (below)
#   bash scripts/test_arm.sh --full   every test, with a long per-test timeout
#
# CI's set leaves out what emulation makes too slow for CI's 90 minutes and checks nothing
# Arm-specific beyond what the set keeps. Measured 2026-12-07 (2-core Xeon VM, qemu 7.2, whole
# suite, -j2; bench/results/2026-12-07-arm-qemu-full-suite.md): over 85 minutes of wall time for
# the tests alone; CI's set 1,690 s of test time, the rest 7,631 s plus three SmolLM2 goldens
# over 600 s each (1,519-2,912 s, re-run on shared cores; with --full every test passes). Left out:
# - the SmolLM2-135M goldens (a real model: 600 s timeouts under qemu; the tiny models' goldens
#   against transformers stay, logits for every weight type);
# - the tiny goldens' greedy-continuation and chat-reply variants (~2,600 s; the logits variant
#   checks the same kernels);
# - the perplexity goldens of tiny-llama's 13 weight types and tiny-mistral (~1,670 s, 100-130 s
#   each: long sequences; the logits goldens of the same files stay, and so do the perplexity
#   goldens of the other tiny models);
# - engine and server integration suites whose work is the same kernels plus threads
#   (batched generation, device masks, backend failure, structured output, speculative
#   decoding, engine cancel/concurrency: ~1,900 s);
# - SlowReaderTest (~200 s: eight 400-token streams; its waits scale with the machine's speed).
# Kept: 640 tests. Measured 2026-12-06 on a 2-vCPU EPYC VM: cold cross build 562 s; this set
# 917 s at -j2 (sharing the 2 cores with another build), the Cortex-A72 run 86 s: the stage is
# ~26 min.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "[test_arm.sh] $1 at ${SECONDS}s"; }
skip='smollm2|SlowReaderTest|BatchedGenerationTest|EngineDeviceMaskTest|BackendFailureTest'
skip+='|EngineStructuredTest|EngineSpecTest|EngineTest\.(CancelAndPreemption|ConcurrentClients)'
skip+='|GoldenTest\.(GreedyContinuations|ChatPrompts)'
skip+='|GoldenTest\.PerplexityMatchesTransformers/tiny_(llama|mistral)'
args=(-E "$skip")
timeout=600
[ "${1:-}" = "--full" ] && args=() && timeout=3600

# -O2 without debug information, and only the targets ctest runs: the cross build is most of
# this stage's time.
cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
  -DJISU_CUDA=OFF -DJISU_BUILD_BENCH=OFF -DJISU_TEST_TIMEOUT=$timeout > /dev/null
cmake --build build-arm --target jisu_tests jisu example_generate
stage "arm cross build done"
(cd build-arm && ctest --output-on-failure -j2 "${args[@]}")
stage "arm tests (qemu -cpu max) done"
# Armv8.0 without SDOT (Cortex-A72): the kernel tests and the feature detection only.
qemu-aarch64 -cpu cortex-a72 build-arm/jisu_tests \
  --gtest_brief=1 --gtest_filter='MatMul*:ActQuant*:NeonFeatures*'
stage "arm kernel tests (qemu -cpu cortex-a72) done"
