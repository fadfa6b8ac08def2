#!/bin/bash
# pp512 on TinyLlama-1.1B-shape Q4_K_M / Q5_K_M / Q6_K files (llama.cpp's quantizer from a
# `jisu make-model --type f16` file): jisu (every K-quant on the integer GEMM) and llama.cpp
# (llama-cpp-python), alternating, 3 rounds, 2 then 1 threads.
J=${J:-build/jisu}
for t in 2 1; do for r in 1 2 3; do for q in q4_k_m q5_k_m q6_k; do
M=/tmp/tl-$q.gguf
echo "$q t=$t r=$r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) jisu $($J bench -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep pp512 | awk -F'|' '{print $6}')"
echo "$q t=$t r=$r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) llama $(/work/peer-venv/bin/python bench/llama_cpp_peer.py -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep -i pp512 | awk -F'|' '{print $6}')"
done; done; done
