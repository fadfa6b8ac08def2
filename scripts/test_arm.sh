#!/usr/bin/env bash
# The Arm stage of scripts/test.sh: cross-builds the test binary for AArch64 (cmake/
# aarch64-linux-gnu.cmake; compiler and arm64 libraries from scripts/setup.sh) and runs the
# tests under qemu-user. "-cpu max" has the dot-product extension, so the default kernels are
# the SDOT ones; the matmul tests force the plain NEON ones too (Isa::kNeon), and a short second
# run on a CPU model without SDOT checks that detection falls back to them. Emulated, so
# nothing here says how fast the kernels are on real Arm hardware.
#   bash scripts/test_arm.sh          CI's set (below)
#   bash scripts/test_arm.sh --full   every test, with a long per-test timeout
#   bash scripts/test_arm.sh --build-only   CI's set's cross build, no test (fills ccache)
#
# CI's set is what can differ on Arm: the kernels (every NEON kernel on both integer kernel
# sets), CPU detection and the thread pool, the model's numerics (tiny models' logits goldens
# against transformers, for every weight type), and the code that reads bytes and text, where
# Arm's unsigned char and alignment could change behaviour (GGUF/safetensors readers,
# tokenizers, grammars, chat templates, JSON and the OpenAI request parsers, sampling,
# quantizers). Only those test sources are cross-built (JISU_TEST_SOURCES_REGEX), without the
# CLI. Left out, and run by --full:
# - the integration suites (engine, batching, server, scheduler, KV, load generator, CLI):
#   portable code whose work on Arm is the same kernels plus threads, and qemu-user on an x86
#   host does not show Arm's weaker memory ordering anyway (JISU_TSAN=1 checks races); 27% of
#   the cross build's compile time;
# - the SmolLM2-135M goldens (a real model: 1,500-2,900 s each under qemu; the tiny models'
#   goldens against transformers stay, logits for every weight type);
# - the tiny goldens' greedy-continuation and chat-reply variants (~2,600 s; the logits variant
#   checks the same kernels);
# - the perplexity goldens of tiny-llama's 13 weight types and tiny-mistral (~1,670 s, 100-130 s
#   each: long sequences; the logits goldens of the same files stay, and so do the perplexity
#   goldens of the other tiny models);
# - tiny-llama's goldens for the GGUF types whose prompt path on Arm is one kept here already:
#   f32 (the safetensors f32 file's), and q8_0/q4_0/q4_k/q5_k/q6_k with float activations and
#   bf16 with int8 ones (dequantized into the same float or integer GEMM the kept f32, f16,
#   bf16, q8_0_int8 and q4_0_int8 goldens run), and tiny-mistral's (llama's kernels; its
#   differences are not Arm's): 45-60 s each emulated, ~550 s in all.
# Measured 2026-12-07 (whole suite under qemu, 2-core VMs; bench/results/2026-12-07-arm-qemu-
# full-suite.md): over 85 minutes of test wall time alone, against CI's 90 for every stage;
# this stage's time now: bench/results/2026-12-07-ci-time.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
sources='/(src/(ops|core|model|backend/cpu|testmodel|format|tokenizer|grammar|sampling|convert|chat)/[^/]*'
sources+='|src/engine/output_processor[^/]*|src/server/(openai_protocol|tools/tool_call_parser'
sources+='|stream_chunk|structured_output_request)|tests/golden)_test\.cc$'
skip='smollm2|GoldenTest\.(GreedyContinuations|ChatPrompts)'
skip+='|GoldenTest\.PerplexityMatchesTransformers/tiny_(llama|mistral)'
skip+='|GoldenTest\.[A-Za-z]+/tiny_llama_gguf_(f32|q8_0|q4_0|q4_k|q5_k|q6_k|bf16_int8)( |$)'
skip+='|GoldenTest\.[A-Za-z]+/tiny_mistral'
args=(-E "$skip")
targets=(jisu_tests example_generate)
timeout=600
build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; fi
if [ "${1:-}" = "--full" ]; then
  args=()
  targets+=(jisu)
  sources=''
  timeout=3600
fi

# -O2 without debug information, and only the targets ctest runs: the cross build is most of
# this stage's time.
cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
  -DJISU_CUDA=OFF -DJISU_BUILD_BENCH=OFF -DJISU_TEST_TIMEOUT=$timeout \
  "-DJISU_TEST_SOURCES_REGEX=$sources" > /dev/null
build "arm cross build" cmake --build build-arm --target "${targets[@]}"
if [ "$build_only" = 1 ]; then exit 0; fi
(cd build-arm && ctest --output-on-failure -j2 "${args[@]}")
stage "arm tests (qemu -cpu max) done"
# Armv8.0 without SDOT (Cortex-A72): that detection falls back to the widening-multiply integer
# kernels and that they run there (the run above already checks them against the references,
# forced by Isa::kNeon; the float kernels do not depend on the extension).
qemu-aarch64 -cpu cortex-a72 build-arm/jisu_tests \
  --gtest_brief=1 --gtest_filter='MatMulIntTest.*:ActQuant*:NeonFeatures*'
stage "arm kernel tests (qemu -cpu cortex-a72) done"
