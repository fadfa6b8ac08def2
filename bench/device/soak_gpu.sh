#!/bin/bash
# On the device machine, after `source bench/device/build.sh jisu`: the GPU soak of issue 37.
#   bash bench/device/soak_gpu.sh MODEL "RATES" SWEEP_SECONDS SOAK_SECONDS [SERVE-ARGS...]
# First a short sweep (one server, `jisu loadgen` for SWEEP_SECONDS at each rate) finds the
# knee: the highest rate whose e2e p99 stays within 1.5x of the lowest rate's and whose
# requests all complete. Then bench/soak.py runs a fresh server at that rate for SOAK_SECONDS,
# recording RSS, GPU memory, errors and p50/p99 every 10 s (soak.csv, summary.json in $OUT;
# the plot is drawn where matplotlib is, from soak.csv).
set -e
model=$1; rates=$2; sweep_s=$3; soak_s=$4; shift 4
out=${OUT:-/tmp}
port=18123
build/jisu serve -m "$model" --device cuda --port $port "$@" > "$out/sweep-serve.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  sleep 1
done
for r in $rates; do
  n=$(python3 -c "print(int($r * $sweep_s * 2) + 20)")
  build/jisu loadgen --base-url "http://127.0.0.1:$port" --rate "$r" --duration "$sweep_s" \
    --num-requests "$n" --seed 7 --label "sweep rate=$r" --out "$out/sweep-r$r.json" \
    > "$out/sweep-r$r.log" 2>&1
done
kill -TERM $pid; wait $pid || true
knee=$(python3 - "$out" $rates <<'EOF'
import json, sys
out, rates = sys.argv[1], sys.argv[2:]
base = None
knee = rates[0]
for r in rates:
    d = json.load(open("%s/sweep-r%s.json" % (out, r)))
    p99 = d["e2e_ms"]["p99"]
    ok = d["failed"] == 0 and d["completed"] == d["started"]
    base = base or p99
    print("rate %s: completed %d/%d, failed %d, e2e p99 %.0f ms, %.1f req/s" % (
        r, d["completed"], d["started"], d["failed"], p99, d["request_throughput"]),
        file=sys.stderr)
    if ok and p99 <= 1.5 * base:
        knee = r
print(knee)
EOF
)
echo "knee rate: $knee req/s"
python3 bench/soak.py --serve "-m $model --device cuda $*" --rate "$knee" \
  --duration "$soak_s" --warmup 60 --out "$out/soak" \
  --label "$model on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), knee $knee req/s"
