#!/bin/bash
# The device tool sends the whole working tree with each call, 64 MiB at most, and the tracked
# files alone take ~63 MiB (the bundled models ~34 MB). What a GPU build and its tests do not
# read steps aside for the call and comes back after it:
#   bash bench/device/slim.sh out    # before the device call
#   bash bench/device/slim.sh in     # right after it (also after an interrupted call)
# It moves bench/results, the tokenizer/chat/grammar/kernel fixtures, the golden logits and the
# tiny SmolLM3 to $JISU_SLIM_DIR (default /tmp/jisu-slim); the CUDA tests need none of them.
set -e
cd "$(git rev-parse --show-toplevel)"
dir=${JISU_SLIM_DIR:-/tmp/jisu-slim}
paths=(bench/results tests/data/tokenizer tests/data/chat tests/data/grammar tests/data/ops
       tests/data/convert_spm tests/data/format tests/data/golden/models/tiny-smollm3)
case "$1" in
  out)
    mkdir -p "$dir"
    for p in "${paths[@]}"; do
      [ -e "$p" ] || continue
      mkdir -p "$dir/$(dirname "$p")"; mv "$p" "$dir/$p"
    done
    mkdir -p "$dir/tests/data/golden"
    for f in tests/data/golden/*.f32; do [ -e "$f" ] && mv "$f" "$dir/tests/data/golden/"; done
    echo "set aside under $dir: run 'bash bench/device/slim.sh in' after the call" ;;
  in)
    [ -d "$dir" ] || { echo "nothing set aside in $dir"; exit 0; }
    for p in "${paths[@]}"; do
      [ -e "$dir/$p" ] && { mkdir -p "$(dirname "$p")"; mv "$dir/$p" "$p"; }
    done
    for f in "$dir"/tests/data/golden/*.f32; do [ -e "$f" ] && mv "$f" tests/data/golden/; done
    git status --short | grep '^ D' && { echo "still missing (above)"; exit 1; }
    echo "all back" ;;
  *) echo "usage: bash bench/device/slim.sh out|in"; exit 2 ;;
esac
