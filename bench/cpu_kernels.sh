#!/usr/bin/env bash
# jisu vs llama.cpp on the CPU, side by side in one sitting (issue 3): makes TinyLlama-1.1B-shape
# random-weight GGUF files with `jisu make-model`, then for each format and thread count runs
# `jisu bench` and bench/llama_cpp_peer.py alternately (ROUNDS times each, on the same file),
# and writes a markdown table of medians and jisu/llama.cpp ratios. A benchmark, not a test.
#
# Usage: bench/cpu_kernels.sh [OUT.md]
# Environment (defaults in brackets):
#   JISU       jisu binary [build/jisu]
#   PEER_PY    python with llama-cpp-python installed [/work/peer-venv/bin/python]
#   MODELS     folder for the generated files [/tmp/jisu-cpu-kernels]
#   SHAPE      make-model shape [tinyllama-1.1b]
#   TYPES      formats ["f16 q8_0 q4_0"]
#   THREADS    thread counts ["1 2"]
#   ROUNDS     alternations of jisu and llama.cpp per cell [3]
#   PP, TG     prompt and generated tokens [512, 128]
#   PEER_ARGS  extra peer flags, e.g. --no-repack [none]
# The peer is installed outside the repository:
#   python3 -m venv /work/peer-venv
#   CMAKE_ARGS="-DGGML_NATIVE=ON" /work/peer-venv/bin/pip install llama-cpp-python
# On a CPU with AMX whose llama.cpp AMX path crashes (as ours did), build AVX-512 without AMX:
#   CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
#     -DGGML_BMI2=ON -DGGML_AVX_VNNI=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON
#     -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
#     -DGGML_AMX_BF16=OFF" pip install --force-reinstall --no-deps llama-cpp-python
set -euo pipefail
cd "$(dirname "$0")/.."

JISU=${JISU:-build/jisu}
PEER_PY=${PEER_PY:-/work/peer-venv/bin/python}
MODELS=${MODELS:-/tmp/jisu-cpu-kernels}
SHAPE=${SHAPE:-tinyllama-1.1b}
TYPES=${TYPES:-"f16 q8_0 q4_0"}
THREADS=${THREADS:-"1 2"}
ROUNDS=${ROUNDS:-3}
PP=${PP:-512}
TG=${TG:-128}
PEER_ARGS=${PEER_ARGS:-}
OUT=${1:-bench/results/$(date -u +%Y-%m-%d)-cpu-kernels.md}

[[ -x "$JISU" ]] || { echo "no jisu binary at $JISU (build it or set JISU)" >&2; exit 1; }
"$PEER_PY" -c "import llama_cpp" 2>/dev/null ||
  { echo "llama-cpp-python is not importable by $PEER_PY (set PEER_PY)" >&2; exit 1; }
mkdir -p "$MODELS" "$(dirname "$OUT")"
RAW=$(mktemp)
trap 'rm -f "$RAW"' EXIT

for type in $TYPES; do
  file="$MODELS/$SHAPE-$type.gguf"
  if [[ ! -f "$file" ]]; then
    "$JISU" make-model --shape "$SHAPE" --type "$type" --seed 1 -o "$file" >&2
  fi
done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for type in $TYPES; do
  file="$MODELS/$SHAPE-$type.gguf"
  for t in $THREADS; do
    for ((round = 1; round <= ROUNDS; ++round)); do
      echo "== $type, $t threads, round $round: jisu" >&2
      j=$("$JISU" bench -m "$file" -p "$PP" -n "$TG" -t "$t" -r 1 --json 2>/dev/null)
      echo "{\"engine\":\"jisu\",\"type\":\"$type\",\"threads\":$t,\"result\":$j}" >>"$RAW"
      echo "== $type, $t threads, round $round: llama.cpp" >&2
      # shellcheck disable=SC2086
      p=$("$PEER_PY" bench/llama_cpp_peer.py -m "$file" -p "$PP" -n "$TG" -t "$t" -r 1 --json \
        $PEER_ARGS)
      echo "{\"engine\":\"llama.cpp\",\"type\":\"$type\",\"threads\":$t,\"result\":$p}" >>"$RAW"
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
membw=$("$JISU" info --membw 2>/dev/null || true)
kernels=$("$JISU" info --system --no-membw 2>/dev/null | sed -n '/^cpu:/,$p' || true)

"$PEER_PY" - "$RAW" "$OUT" "$PP" "$TG" "$ROUNDS" "$load_before" "$load_after" "$membw" \
  "$kernels" "$SHAPE" "$PEER_ARGS" <<'EOF'
import json, statistics, sys, datetime
raw, out, pp, tg, rounds, load0, load1, membw, kernels, shape, peer_args = sys.argv[1:]
rows = [json.loads(l) for l in open(raw)]
cells = {}
for r in rows:
    c = cells.setdefault((r["type"], r["threads"]), {"jisu": ([], []), "llama.cpp": ([], [])})
    c[r["engine"]][0].append(r["result"]["pp_tokens_per_s"])
    c[r["engine"]][1].append(r["result"]["tg_tokens_per_s"])
peer_info = next((r["result"].get("system_info", "") for r in rows
                  if r["engine"] == "llama.cpp"), "")
peer_version = next((r["result"].get("llama_cpp_python", "") for r in rows
                     if r["engine"] == "llama.cpp"), "")
med = lambda xs: statistics.median(xs) if xs else float("nan")
ratio = lambda a, b: a / b if b else float("nan")
lines = [
    f"# CPU kernels: jisu vs llama.cpp, {shape} shape (random weights)",
    "",
    f"Date (UTC): {datetime.datetime.utcnow():%Y-%m-%d %H:%M}. Load average before/after: "
    f"{load0} / {load1} (a 2-core machine shared with other work: read ratios, not absolutes).",
    f"Each cell: median of {rounds} alternating runs (jisu bench -r 1, then "
    f"llama_cpp_peer.py -r 1, each after its own warm-up), same GGUF file and thread count.",
    f"llama.cpp: llama-cpp-python {peer_version} {peer_args}; {peer_info}",
    f"{membw}",
    "",
    f"| format | threads | jisu pp{pp} | llama.cpp pp{pp} | ratio | jisu tg{tg} | "
    f"llama.cpp tg{tg} | ratio |",
    "|---|---|---|---|---|---|---|---|",
]
for (t, th), c in cells.items():
    jp, jt = med(c["jisu"][0]), med(c["jisu"][1])
    lp, lt = med(c["llama.cpp"][0]), med(c["llama.cpp"][1])
    lines.append(f"| {t} | {th} | {jp:.2f} | {lp:.2f} | {ratio(jp, lp):.2f} | {jt:.2f} | "
                 f"{lt:.2f} | {ratio(jt, lt):.2f} |")
lines += ["", "All runs (tokens/s):", ""]
for (t, th), c in cells.items():
    for eng, (p, g) in c.items():
        lines.append(f"- {t}, {th} thr, {eng}: pp {[round(x, 2) for x in p]}, "
                     f"tg {[round(x, 2) for x in g]}")
lines += ["", "jisu system and kernels:", "", "```", kernels, "```", ""]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
EOF
echo "wrote $OUT" >&2
