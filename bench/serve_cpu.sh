#!/usr/bin/env bash
# Serving benchmark on the CPU: starts `jisu serve` once per prefix-cache mode (off, shared,
# full) and drives it with `jisu loadgen` (built-in mixed workload, Poisson arrivals) at several
# request rates; writes one JSON per run and a Markdown summary to $OUT.
#
#   bash bench/serve_cpu.sh [MODEL]            # default models/tiny-llama
#   RATES="1 2 4" N=40 MODES="off shared full" LOADGEN_ARGS="--no-user" bash bench/serve_cpu.sh
#
# A benchmark, not a test: figures depend on the machine and on what else runs on it.
set -euo pipefail
cd "$(dirname "$0")/.."
JISU=${JISU:-build/jisu}
MODEL=${1:-models/tiny-llama}
RATES=${RATES:-"1 2 4"}
N=${N:-40}
SEED=${SEED:-1}
MODES=${MODES:-"off shared full"}
PORT=${PORT:-18090}
THREADS=${THREADS:-2}
SERVE_ARGS=${SERVE_ARGS:-"--kv-memory 256MiB --max-model-len 1024"}
LOADGEN_ARGS=${LOADGEN_ARGS:-}
NAME=$(basename "$MODEL")
OUT=${OUT:-bench/results/serve-cpu-$(date -u +%F)}
mkdir -p "$OUT"

server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

for mode in $MODES; do
  # shellcheck disable=SC2086
  "$JISU" serve -m "$MODEL" --port "$PORT" -t "$THREADS" --prefix-cache "$mode" $SERVE_ARGS \
    >"$OUT/serve-$NAME-$mode.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    kill -0 "$server_pid" 2>/dev/null || { echo "server died, see $OUT/serve-$NAME-$mode.log"; exit 1; }
    sleep 0.2
  done
  # Warm-up (lazy allocations, page cache) with a request set of its own seed; not recorded.
  # shellcheck disable=SC2086
  "$JISU" loadgen --base-url "http://127.0.0.1:$PORT" --concurrency 2 --num-requests 4 \
    --seed 999 $LOADGEN_ARGS >/dev/null
  for rate in $RATES; do
    echo "== $NAME prefix-cache=$mode rate=$rate"
    # shellcheck disable=SC2086
    "$JISU" loadgen --base-url "http://127.0.0.1:$PORT" --rate "$rate" --num-requests "$N" \
      --seed "$SEED" --ignore-eos --label "$NAME $mode rate=$rate" $LOADGEN_ARGS \
      --out "$OUT/$NAME-$mode-r$rate.json"
  done
  stop_server
done

python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(out, "*-r*.json"))):
    j = json.load(open(f))
    c = j["config"]
    rows.append((j["label"], c["rate"], j))
lines = ["| run | rate req/s | done/failed | req/s | out tok/s | in tok/s | cached tok | "
         "TTFT p50/p90/p99 ms | TPOT p50/p90 ms | ITL p50/p99 ms | E2E p50/p99 ms | goodput req/s |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for label, rate, j in sorted(rows, key=lambda r: (r[0].split()[0], r[0].split()[1], r[1])):
    t, p, i, e = j["ttft_ms"], j["tpot_ms"], j["itl_ms"], j["e2e_ms"]
    lines.append(f"| {label} | {rate:g} | {j['completed']}/{j['failed']} | "
                 f"{j['request_throughput']:.2f} | {j['output_token_throughput']:.0f} | "
                 f"{j['input_token_throughput']:.0f} | {j['cached_tokens']} | "
                 f"{t['p50']:.0f}/{t['p90']:.0f}/{t['p99']:.0f} | {p['p50']:.1f}/{p['p90']:.1f} | "
                 f"{i['p50']:.1f}/{i['p99']:.1f} | {e['p50']:.0f}/{e['p99']:.0f} | "
                 f"{j['goodput']:.2f} |")
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
