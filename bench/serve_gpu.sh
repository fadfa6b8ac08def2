#!/usr/bin/env bash
# jisu serve on the GPU with random weights at a real shape (no model hub needed), measured by
# jisu loadgen at fixed concurrencies on the built-in mixed workload (chat / summarization /
# code, 40% with a shared system prompt, Zipf users). Outputs run to max_tokens (ignore_eos),
# because random weights would stop at random places; /v1/completions, since a random-weight
# model has no chat template.
# Usage: bench/serve_gpu.sh [JISU] [SHAPE] [OUTDIR] [CONCURRENCIES]
# Extra loadgen flags (e.g. "--temperature 0.8") in $LOADGEN_ARGS, extra serve flags in $SERVE_ARGS.
set -euo pipefail
JISU=${1:-build/jisu}
SHAPE=${2:-llama-3.1-8b}
OUT=${3:-/tmp/jisu-serve-gpu}
LEVELS=${4:-"1 16 64 256"}
PORT=${PORT:-18080}
mkdir -p "$OUT"
"$JISU" serve -m "dummy:$SHAPE:bf16" --device cuda --kv-memory 0.9 --port "$PORT" \
  --max-model-len 4096 --max-seqs 256 --max-batch-tokens 2048 --max-queue 4096 ${SERVE_ARGS:-} \
  >"$OUT/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 900); do
  if "$JISU" loadgen --help >/dev/null 2>&1 && curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; then
    break
  fi
  kill -0 $pid 2>/dev/null || { tail -20 "$OUT/serve.log"; exit 1; }
  sleep 1
done
for c in $LEVELS; do
  n=$((c * 4))
  if [ $n -lt 16 ]; then n=16; fi
  "$JISU" loadgen --base-url "http://127.0.0.1:$PORT" --concurrency "$c" --num-requests "$n" \
    --endpoint completions --seed 1 --ignore-eos --workload-dir bench/workload --label "$SHAPE c=$c" ${LOADGEN_ARGS:-} \
    --out "$OUT/loadgen-c$c.json" | tee "$OUT/loadgen-c$c.txt"
done
curl -s "http://127.0.0.1:$PORT/metrics" >"$OUT/metrics.txt" || true
kill -TERM $pid
wait $pid
