#!/bin/bash
cd /work/main
M=/tmp/cpu-f16/tinyllama-1.1b-q4_k_m.gguf
for t in 2 1; do for r in 1 2 3; do
echo "t=$t r=$r load $(cut -d' ' -f1 /proc/loadavg) base $(/tmp/jisu_base bench -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep pp512 | awk -F'|' '{print $6}')"
echo "t=$t r=$r load $(cut -d' ' -f1 /proc/loadavg) new $(./build/jisu bench -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep pp512 | awk -F'|' '{print $6}')"
echo "t=$t r=$r load $(cut -d' ' -f1 /proc/loadavg) llama $(/work/peer-venv/bin/python bench/llama_cpp_peer.py -m $M -t $t -p 512 -n 0 -r 1 2>&1 | grep -i pp512 | awk -F'|' '{print $6}')"
done; done
