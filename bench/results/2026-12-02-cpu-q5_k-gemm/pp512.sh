#!/bin/bash
# pp512 on a TinyLlama-1.1B-shape Q5_K_M file (llama.cpp's quantizer): jisu before/after the Q5_K
# integer GEMM and llama.cpp (llama-cpp-python), alternating, 2 then 1 threads, 3 rounds.
M=/tmp/tl-q5_k_m.gguf
for t in 2 1; do for r in 1 2 3; do
echo "t=$t r=$r load $(cut -d' ' -f1 /proc/loadavg) base $(/tmp/jisu-q5base bench -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep pp512 | awk -F'|' '{print $6}')"
echo "t=$t r=$r load $(cut -d' ' -f1 /proc/loadavg) new $(/tmp/jisu-q5new bench -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep pp512 | awk -F'|' '{print $6}')"
echo "t=$t r=$r load $(cut -d' ' -f1 /proc/loadavg) llama $(/work/peer-venv/bin/python bench/llama_cpp_peer.py -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep -i pp512 | awk -F'|' '{print $6}')"
done; done
