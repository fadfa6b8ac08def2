#!/bin/bash
# On the device machine, after `source bench/device/build.sh jisu`: the GPU soak of issue 37,
# in two steps that fit the device tool's 10-minute calls:
#   bash bench/device/soak_gpu.sh sweep MODEL "RATES" SECONDS [SERVE-ARGS...]
#   bash bench/device/soak_gpu.sh soak MODEL RATE SECONDS [SERVE-ARGS...]
# sweep: one server, `jisu loadgen` for SECONDS at each rate; the knee is the highest rate
# whose e2e p99 stays within 1.5x of the lowest rate's and whose requests all complete
# (written to $OUT/knee.txt). soak: bench/soak.py runs a fresh server at RATE for SECONDS,
# recording RSS, GPU memory, errors and p50/p99 every 10 s ($OUT/soak: soak.csv,
# summary.json; the plot is drawn where matplotlib is, with soak.py --plot-only).
set -e
mode=$1; model=$2; rates=$3; secs=$4; shift 4
out=${OUT:-/tmp}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ "$mode" = soak ]; then
  python3 bench/soak.py --serve "-m $model --device cuda $*" --rate "$rates" \
    --duration "$secs" --warmup 60 --out "$out/soak" --label "$model on $gpu, $rates req/s"
  exit
fi
port=18123
build/jisu serve -m "$model" --device cuda --port $port "$@" > "$out/sweep-serve.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  sleep 1
done
for r in $rates; do
  n=$(python3 -c "print(int($r * $secs * 2) + 20)")
  build/jisu loadgen --base-url "http://127.0.0.1:$port" --rate "$r" --duration "$secs" \
    --num-requests "$n" --seed 7 --label "sweep rate=$r" --out "$out/sweep-r$r.json" \
    > "$out/sweep-r$r.log" 2>&1
done
kill -TERM $pid; wait $pid || true
python3 - "$out" $rates <<'EOF' | tee "$out/sweep.txt"
import json, sys
out, rates = sys.argv[1], sys.argv[2:]
base = None
knee = rates[0]
for r in rates:
    d = json.load(open("%s/sweep-r%s.json" % (out, r)))
    p99 = d["e2e_ms"]["p99"]
    ok = d["failed"] == 0 and d["completed"] == d["started"]
    base = base or p99
    print("rate %s: completed %d/%d, failed %d, e2e p50 %.0f p99 %.0f ms, TPOT p50 %.1f ms, "
          "%.1f req/s, %.0f output tok/s" % (
              r, d["completed"], d["started"], d["failed"], d["e2e_ms"]["p50"], p99,
              d["tpot_ms"]["p50"], d["request_throughput"], d["output_token_throughput"]))
    if ok and p99 <= 1.5 * base:
        knee = r
open("%s/knee.txt" % out, "w").write(knee + "\n")
print("knee rate: %s req/s" % knee)
EOF
