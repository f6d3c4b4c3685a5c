#!/bin/bash
# Session 35: does flash3's forward lose more than cuDNN's when the SM clock rises? ncu times one
# launch of each (flash3_prof.py: the flash3 forward, its split tail where it runs, torch SDPA
# cuDNN) twice: with ncu's default clock control (SM clock locked at base, ~1.31 GHz on the H200)
# and with --clock-control none (whatever the board runs: boost for a single launch). Only the
# SpeedOfLight section (duration, SM frequency), so each launch replays a few passes.
# Needs build_f3/libflash3_shim.so (flash3_shim_only.sh). Writes $OUT/clock_probe.txt.
# Usage: OUT=... bash bench/gpu/flash3_clock_probe.sh "D:S:causal,..."
set -u
OUT=${OUT:-/tmp/flash3_out}
SHAPES=${1:-128:4096:0,64:1024:1}
cd bench/gpu
for cc in base none; do
  timeout ${F3_NCU_TIMEOUT:-120} ncu --clock-control $cc --section SpeedOfLight \
    -k regex:'fwd_kernel|sdpa|fprop|fmha' -o /tmp/clock_$cc -f \
    python3 flash3_prof.py --lib ../../build_f3/libflash3_shim.so --shapes "$SHAPES" \
    > /tmp/clock_$cc.log 2>&1
  echo "ncu clock-control $cc rc=$?"
  ncu -i /tmp/clock_$cc.ncu-rep --page details --csv > /tmp/clock_$cc.csv 2>&1
done
cd ../..
python3 - <<'PY' | tee "$OUT/clock_probe.txt"
import csv
rows = {}
for cc in ("base", "none"):
    for r in csv.DictReader(open(f"/tmp/clock_{cc}.csv")):
        if r.get("Metric Name") in ("Duration", "SM Frequency"):
            key = (int(r["ID"]), r["Kernel Name"][:70])
            rows.setdefault(key, {})[(cc, r["Metric Name"])] = (r["Metric Value"], r["Metric Unit"])
def value(m, cc, metric):  # "1.01 ms", or "-" where that mode did not profile the launch
    v = m.get((cc, metric))
    return f"{v[0]} {v[1]}" if v else "-"
print(f"{'id':>3} {'kernel':70} | base: duration, clock | none: duration, clock")
for (i, name), m in sorted(rows.items()):
    cells = " | ".join(f"{value(m, cc, 'Duration')}, {value(m, cc, 'SM Frequency')}"
                       for cc in ("base", "none"))
    print(f"{i:>3} {name:70} | {cells}")
PY
