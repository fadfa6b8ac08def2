#!/bin/bash
# On the device machine, from the repository root, after `source bench/device/build.sh`:
# builds the base commit's jisu from build-deps/base-src.tar.xz (made here by
#   git archive --format=tar BASE src include cmake CMakeLists.txt examples | xz > build-deps/base-src.tar.xz
# and carried with build-deps) against the same carried dependencies and flags, then runs
# `bench-gpu` alternating new/base. Usage: bash bench/device/ab_gpu.sh ROUNDS BENCH-GPU-ARGS...
set -e
rounds=$1; shift
repo=$PWD
rm -rf /tmp/base && mkdir -p /tmp/base && tar xJf build-deps/base-src.tar.xz -C /tmp/base
deps=$repo/build-deps/usr; lib=$deps/lib/x86_64-linux-gnu
(cd /tmp/base && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
   -DCMAKE_CUDA_ARCHITECTURES=90a -DJISU_BUILD_BENCH=OFF -DJISU_BUILD_TESTS=OFF \
   -DCMAKE_PREFIX_PATH="$deps" -DPKG_CONFIG_EXECUTABLE="${PKG_CONFIG_EXECUTABLE:-$(command -v pkg-config || echo /tmp/pkg-config)}" \
   -DCMAKE_EXE_LINKER_FLAGS="-L$lib -Wl,-rpath-link,$lib" > /tmp/base-cmake.log 2>&1 &&
 cmake --build build --target jisu -j "$(nproc)" > /tmp/base-build.log 2>&1) ||
  { tail -30 /tmp/base-cmake.log /tmp/base-build.log; exit 1; }
for r in $(seq "$rounds"); do
  for side in new base; do
    bin=$repo/build/jisu; [ $side = base ] && bin=/tmp/base/build/jisu
    echo "== round $r $side"
    "$bin" bench-gpu "$@" 2>&1 | grep -vE '^\s*$'
  done
done
