#!/bin/bash
# On the device machine (16 cores), from the repository root with build-deps/ unpacked: a
# ThreadSanitizer build of jisu and jisu_tests (gcc, CUDA off) against the carried
# dependencies, then ctest under TSan. Study aid for CI's TSan stage (scripts/test.sh builds the
# same with clang on the CI machine). Usage: bash bench/device/tsan.sh [CTEST-ARGS...]
set -e
[ -d build-deps/usr ] || tar xJf build-deps/usr.tar.xz -C build-deps
deps=$PWD/build-deps/usr; lib=$deps/lib/x86_64-linux-gnu
sed -i "s|@PREFIX@|$deps|" "$lib"/pkgconfig/*.pc
export PKG_CONFIG_PATH=$lib/pkgconfig
pkgc=$(command -v pkg-config || true)
if [ -z "$pkgc" ]; then
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$lib" "$deps/bin/pkgconf" > /tmp/pkg-config
  chmod +x /tmp/pkg-config; pkgc=/tmp/pkg-config
fi
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJISU_TSAN=ON \
  -DJISU_CUDA=OFF -DJISU_BUILD_BENCH=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DCMAKE_PREFIX_PATH="$deps" -DPKG_CONFIG_EXECUTABLE="$pkgc" \
  -DCMAKE_EXE_LINKER_FLAGS="-L$lib -Wl,-rpath-link,$lib" > /tmp/tsan-cmake.log 2>&1 ||
  { tail -30 /tmp/tsan-cmake.log; exit 1; }
# -k 0: the post-build test discovery runs without the carried libraries (see build.sh) and
# fails; the binaries are linked by then. The tests run as 16 gtest shards instead of ctest.
cmake --build build-tsan --target jisu_tests jisu example_generate -j "$(nproc)" -- -k 0 \
  > "${OUT:-/tmp}/tsan-build.log" 2>&1 || true
[ -x build-tsan/jisu_tests ] || { grep -E "error" "${OUT:-/tmp}/tsan-build.log" | head -20; exit 1; }
export LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-}
shards=16
for i in $(seq 0 $((shards - 1))); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
    TSAN_OPTIONS="second_deadlock_stack=1 suppressions=$PWD/tools/tsan.supp" \
    build-tsan/jisu_tests "$@" > /tmp/tsan-shard-$i.log 2>&1 &
done
wait || true
cat /tmp/tsan-shard-*.log > "${OUT:-/tmp}/tsan-tests.log"
echo "tests: $(grep -c '^\[       OK' "${OUT:-/tmp}/tsan-tests.log") ok," \
  "$(grep -c '^\[  FAILED  \] [A-Za-z]' "${OUT:-/tmp}/tsan-tests.log") failed lines," \
  "$(grep -c 'WARNING: ThreadSanitizer' "${OUT:-/tmp}/tsan-tests.log") TSan warnings"
grep -E '^\[  FAILED  \] [A-Za-z]' "${OUT:-/tmp}/tsan-tests.log" | sort -u | head -40
grep -A12 'WARNING: ThreadSanitizer' "${OUT:-/tmp}/tsan-tests.log" | head -150
