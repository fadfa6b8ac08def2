#!/bin/bash
# Batch-1 step breakdown: bench-gpu --profile (CUDA events, graphs off) and Nsight Compute
# durations of every kernel of decode steps at the real clocks (--clock-control none).
set -u
D=$PWD/build-dev/bins; mkdir -p $D; tar xJf build-dev/bins.tar.xz -C $D
export LD_LIBRARY_PATH=$D:${LD_LIBRARY_PATH:-}
N=$D/jisu; NC=/usr/local/cuda/bin/ncu
true
timeout 400 $NC --clock-control none --metrics gpu__time_duration.sum --kernel-name-base demangled --launch-skip 400 --launch-count 420 --csv $N bench-gpu --device-sampling --batch 1 --prefill 16 --steps 8 > $OUT/ncu_b1.csv 2> $OUT/ncu_err.log
echo "ncu rc=$?"; tail -2 $OUT/ncu_err.log
python3 - $OUT/ncu_b1.csv <<'PY' | tee $OUT/ncu_b1_summary.txt
import csv,sys,collections
lines=open(sys.argv[1]).read().splitlines()
start=[i for i,l in enumerate(lines) if l.startswith('"ID"')][0]
rows=list(csv.reader(lines[start:]))
h=rows[0]; idx={k:i for i,k in enumerate(h)}
d=collections.defaultdict(list); seq=[]
for r in rows[1:]:
    if len(r)<len(h) or r[idx['Metric Name']]!='gpu__time_duration.sum': continue
    name=r[idx['Kernel Name']].split('(')[0][:80]
    v=float(r[idx['Metric Value']].replace(',','')); unit=r[idx['Metric Unit']]
    v = v/1000 if unit=='nsecond' else v*1000 if unit=='msecond' else v
    d[name].append(v); seq.append((name,v))
tot=0
for k,v in sorted(d.items(), key=lambda x:-sum(x[1])):
    tot+=sum(v); print(f"{len(v):5d} {sum(v):9.1f}us avg {sum(v)/len(v):8.2f} min {min(v):7.2f} max {max(v):7.2f}  {k}")
print("total", round(tot,1))
for n,v in seq[:14]: print(f"{v:8.2f} {n}")
PY
