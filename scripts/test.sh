#!/usr/bin/env bash
# Runs the whole test suite: unit and integration tests (ctest), the sanitizer build's tests,
# and a short fuzzing run of every parser. Expects scripts/setup.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

cmake --build build
(cd build && ctest --output-on-failure -j2)

# jisu serve driven by curl and the openai client (tests/server).
for t in tests/server/test_*.py; do .venv/bin/python "$t"; done

if [ "${JISU_SKIP_SANITIZE:-0}" != "1" ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJISU_SANITIZE=ON
  cmake --build build-asan --target jisu_tests jisu
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j2)
fi

if [ "${JISU_SKIP_FUZZ:-0}" != "1" ] && ls fuzz/*_fuzz.cc >/dev/null 2>&1; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DJISU_FUZZ=ON -DJISU_BUILD_TESTS=OFF
  cmake --build build-fuzz
  for src in fuzz/*_fuzz.cc; do
    name=$(basename "$src" .cc)
    corpus="fuzz/corpus/${name%_fuzz}"
    mkdir -p "build-fuzz/corpus-$name"
    echo "fuzzing $name for ${JISU_FUZZ_SECONDS:-20}s"
    "build-fuzz/$name" -max_total_time="${JISU_FUZZ_SECONDS:-20}" -rss_limit_mb=2048 \
      -max_len=65536 "build-fuzz/corpus-$name" $( [ -d "$corpus" ] && echo "$corpus" ) \
      > "build-fuzz/$name.log" 2>&1 || { tail -50 "build-fuzz/$name.log"; exit 1; }
  done
fi
echo "all test stages passed"
