#!/usr/bin/env bash
# The Arm stage of scripts/test.sh: cross-builds the test binary for AArch64 (cmake/
# aarch64-linux-gnu.cmake; compiler and arm64 libraries from scripts/setup.sh) and runs the
# whole ctest suite under qemu-user. "-cpu max" has the dot-product extension, so the default
# kernels are the SDOT ones; the matmul tests force the plain NEON ones too (Isa::kNeon), and a
# short second run on a CPU model without SDOT checks that detection falls back to them.
# Emulated, so nothing here says how fast the kernels are on real Arm hardware.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "[test_arm.sh] $1 at ${SECONDS}s"; }

# -O2 without debug information, and only the targets ctest runs: the cross build is most of
# this stage's time.
cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
  -DJISU_CUDA=OFF -DJISU_BUILD_BENCH=OFF > /dev/null
cmake --build build-arm --target jisu_tests jisu example_generate
stage "arm cross build done"
(cd build-arm && ctest --output-on-failure -j2)
stage "arm tests (qemu -cpu max) done"
# Armv8.0 without SDOT (Cortex-A72): the kernel tests and the feature detection only.
qemu-aarch64 -cpu cortex-a72 build-arm/jisu_tests \
  --gtest_brief=1 --gtest_filter='MatMul*:ActQuant*:NeonFeatures*'
stage "arm kernel tests (qemu -cpu cortex-a72) done"
