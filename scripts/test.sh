#!/usr/bin/env bash
# Runs the whole test suite: unit and integration tests (ctest), the server scripts, the Arm
# build under qemu, the ASan/UBSan and ThreadSanitizer builds' tests, and a short fuzzing run of
# every parser. Expects scripts/setup.sh to have run.
#   bash scripts/test.sh               everything
#   bash scripts/test.sh --build-only  every build, no test: fills the compiler cache, so that
#                                      the next run, in this clone or another, compiles little
#   bash scripts/test.sh --time-limit S  as the first, but leaves the ThreadSanitizer stage out,
#                                      saying so, when less than it needs of S seconds is left
#                                      (.ci/run: CI's 90 minutes with an empty compiler cache)
# JISU_SKIP_ARM / JISU_SKIP_SANITIZE / JISU_SKIP_TSAN / JISU_SKIP_FUZZ=1 leave a stage out.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
source scripts/stage.sh
build_only=0
time_limit=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) build_only=1 ;;
    --time-limit) time_limit=$2; shift ;;
    *) echo "usage: $0 [--build-only] [--time-limit SECONDS]" >&2; exit 2 ;;
  esac
  shift
done

build "release build" cmake --build build
if [ "$build_only" = 0 ]; then
  (cd build && ctest --output-on-failure -j2)
  stage "release tests done"

  # jisu serve driven by curl and the openai client (tests/server).
  for t in tests/server/test_*.py; do .venv/bin/python "$t"; done
  stage "server tests done"
fi

# AArch64: the NEON kernels and everything else that fits, cross-built and run under qemu-user
# (scripts/test_arm.sh says what it leaves out and why). JISU_SKIP_ARM=1 skips it.
if [ "${JISU_SKIP_ARM:-0}" != "1" ]; then
  bash scripts/test_arm.sh $( [ "$build_only" = 1 ] && echo --build-only )
  stage "arm stage done"
fi

# Sanitizers and fuzzing: one clang build (build-san) carries ASan, UBSan and the coverage
# instrumentation libFuzzer needs, so the sanitizer test run and the fuzzers share one compile
# of the sources; -O1 -gline-tables-only keeps stack traces with lines at half the compile time
# of -O2 -g (bench/results/2026-12-06-ci-stages.md). ThreadSanitizer needs its own build.
SAN_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJISU_BUILD_BENCH=OFF
          "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG")
if [ "${JISU_SKIP_SANITIZE:-0}" != "1" ] || [ "${JISU_SKIP_FUZZ:-0}" != "1" ]; then
  CC=clang CXX=clang++ cmake -S . -B build-san "${SAN_ARGS[@]}" -DJISU_SANITIZE=ON -DJISU_FUZZ=ON
  build "asan+fuzz build" cmake --build build-san
fi

if [ "$build_only" = 0 ] && [ "${JISU_SKIP_SANITIZE:-0}" != "1" ]; then
  # Left out here, ~12x slower under ASan: SmolLM2's perplexity and greedy-continuation goldens,
  # and the perplexity and chat goldens of tiny-llama's GGUF weight types. Arithmetic the
  # Release run checks; the logits, tokenizer and greedy goldens of every file, and the other
  # models' perplexity goldens, run the same loading, prefill and decode code under the
  # sanitizers.
  asan_skip='GoldenTest\.(PerplexityMatchesTransformers|GreedyContinuationsMatchTransformers)/smollm2'
  asan_skip+='|GoldenTest\.(PerplexityMatchesTransformers|ChatPromptsAndRepliesMatchTransformers)/tiny_llama_gguf_'
  # And the slow readers that complete (210 s under ASan, nearly all of it waiting on readers):
  # its promises are about time, its write path is every streaming test's; the stalled reader's
  # test, which takes the cut-off path, stays.
  asan_skip+='|SlowReaderTest\.SlowReadersOfAnswersWithinTheSocketBuffersComplete'
  (cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j2 -E "$asan_skip")
  stage "asan tests done"
fi

# ThreadSanitizer: its own clang build, of the suites where threads meet (CMakeLists.txt lists
# them: engine, scheduler, server, KV, thread pool, loadgen, API; no CLI test, so no CLI build).
# With a cold compiler cache it needs ~1,050 s (594 s build, 457 s tests on CI's 2 cores,
# bench/results/2026-12-07-ci-time.md) and the fuzzers ~100 s after it.
tsan_needs=1300
if [ "$time_limit" -gt 0 ] && [ $((time_limit - SECONDS)) -lt "$tsan_needs" ]; then
  echo "[test.sh] ThreadSanitizer stage LEFT OUT: $((time_limit - SECONDS)) s of the" \
       "$time_limit s limit left, it needs ~$tsan_needs s when nothing is cached" \
       "(the compiler cache was cold; a second run fits it)"
elif [ "${JISU_SKIP_TSAN:-0}" != "1" ]; then
  CC=clang CXX=clang++ cmake -S . -B build-tsan "${SAN_ARGS[@]}" -DJISU_TSAN=ON
  build "tsan build" cmake --build build-tsan --target jisu_tests
  if [ "$build_only" = 0 ]; then
    (cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 \
       suppressions=$PWD/../tools/tsan.supp" ctest --output-on-failure -j2)
    stage "tsan tests done"
  fi
fi

# A short run per parser (each replays its corpus first), what CI's 90 minutes leave room for;
# JISU_FUZZ_SECONDS=3600 for a campaign.
if [ "$build_only" = 0 ] && [ "${JISU_SKIP_FUZZ:-0}" != "1" ] && ls fuzz/*_fuzz.cc >/dev/null 2>&1; then
  for src in fuzz/*_fuzz.cc; do
    name=$(basename "$src" .cc)
    corpus="fuzz/corpus/${name%_fuzz}"
    mkdir -p "build-san/corpus-$name"
    echo "fuzzing $name for ${JISU_FUZZ_SECONDS:-10}s"
    "build-san/$name" -max_total_time="${JISU_FUZZ_SECONDS:-10}" -rss_limit_mb=2048 \
      -max_len=65536 "build-san/corpus-$name" $( [ -d "$corpus" ] && echo "$corpus" ) \
      > "build-san/$name.log" 2>&1 || { tail -50 "build-san/$name.log"; exit 1; }
  done
  stage "fuzzing done"
fi
if [ "$build_only" = 1 ]; then echo "every build done"; else echo "all test stages passed"; fi
