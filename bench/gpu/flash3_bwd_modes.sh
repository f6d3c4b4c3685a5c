#!/bin/bash
# Is a flash3 backward A/B difference the kernel or the process? Builds the standalone A/B tool
# (bench/gpu/flash3_bwd_ab.cu) once per build flavour, then runs every (flavour, variant) in its
# own process, ROUNDS times, in ABBA order (the order reversed every other round), and prints per
# config the per-process medians side by side and the median of them. Optionally an ncu
# source-level profile (S 4k non-causal) per listed flavour:D:variant, as flash3_bwd_gpu_run.sh.
# Why (session 10): the session 9 A/B had two variant kernels lose 8-12 % on D 128 4k / 16k rows
# where the same default read 551-603 TFLOP/s in two binaries of one call.
# Usage: OUT=dir [FLAVOURS="base:|lf:-DATTNKIT_FLASH3_BWD_LATE_FENCE=1"]
#        [VARIANTS="default default+tmakv"] [CFGS="4096,128,0 ..."] [ROUNDS=4] [REPS=20]
#        [NCU="base:128:default base:128:default+tmakv"] [DUMP=1] bash bench/gpu/flash3_bwd_modes.sh
# Writes $OUT/modes.txt (table), $OUT/modes_raw.txt (every process's lines) and $OUT/ncu.tgz.
set -u
OUT=${OUT:?OUT}
FLAVOURS=${FLAVOURS:-base:}
VARIANTS=${VARIANTS:-default default+tmakv}
CFGS=${CFGS:-1024,128,0 4096,128,0 4096,128,1 16384,128,0 16384,128,1}
ROUNDS=${ROUNDS:-4}
REPS=${REPS:-20}
NCU=${NCU:-}
mkdir -p "$OUT" /tmp/f3modes
# DUMP=1 (session 12): every process also writes (first) or compares (later) dq / dk / dv per
# config (flash3_bwd_ab.cu F3AB_DUMP): dK / dV bitwise across build flavours, dQ to the
# atomics' order; the "check" lines go to modes.txt.
DUMP_ENV=
if [ "${DUMP:-0}" = 1 ]; then rm -f /tmp/f3modes/dump_*.bin; DUMP_ENV="F3AB_DUMP=/tmp/f3modes/dump"; fi
t0=$(date +%s)
# One object per translation unit and flavour, all in parallel (16 cores), then one link each.
IFS='|' read -r -a FL <<< "$FLAVOURS"
# SKIP_BUILD=1: use the binaries already in /tmp/f3modes (a second job in the same call).
[ "${SKIP_BUILD:-0}" = 1 ] && FL_BUILD=() || FL_BUILD=("${FL[@]}")
for f in "${FL_BUILD[@]}"; do
  name=${f%%:*}; defs=${f#*:}
  # (D 256 since session 42: its bf16 launcher also references the varlen and deterministic
  # TUs' kernels)
  for tu in bench/gpu/flash3_bwd_ab.cu src/backends/flash3/instantiations/bwd_d64_bf16.cu \
            src/backends/flash3/instantiations/bwd_d128_bf16.cu \
            src/backends/flash3/instantiations/bwd_d256_bf16.cu \
            src/backends/flash3/instantiations/bwd_d256_varlen_bf16.cu \
            src/backends/flash3/instantiations/bwd_d256_det.cu; do
    o=/tmp/f3modes/$name-$(basename $tu .cu).o
    nvcc -std=c++20 -O3 -lineinfo $defs -gencode=arch=compute_90a,code=sm_90a -I include -I src \
      -c $tu -o $o > /tmp/f3modes/$name-$(basename $tu .cu).log 2>&1 &
  done
  nvcc -std=c++20 -O2 -I include -I src -c src/cuda/workspace.cpp \
    -o /tmp/f3modes/$name-workspace.o > /tmp/f3modes/$name-workspace.log 2>&1 &
  # (bwd_launch.cuh asks cuda::device_info for the SM count since session 26)
  nvcc -std=c++20 -O2 -I include -I src -x cu -c src/cuda/device_info.cpp \
    -o /tmp/f3modes/$name-device_info.o > /tmp/f3modes/$name-device_info.log 2>&1 &
done
wait
for f in "${FL_BUILD[@]}"; do
  name=${f%%:*}
  nvcc -gencode=arch=compute_90a,code=sm_90a /tmp/f3modes/$name-*.o -o /tmp/f3modes/ab-$name \
    > /tmp/f3modes/$name-link.log 2>&1 ||
    { echo "build $name failed"; tail -n 30 /tmp/f3modes/$name-*.log; }
done
echo "builds: $(( $(date +%s) - t0 )) s" | tee "$OUT/modes.txt"
: > "$OUT/modes_raw.txt"
# Process list: every flavour x variant; reversed on odd rounds (ABBA).
procs=()
for f in "${FL[@]}"; do
  for v in $VARIANTS; do procs+=("${f%%:*}|$v"); done
done
for r in $(seq 1 $ROUNDS); do
  order=("${procs[@]}")
  if [ $((r % 2)) -eq 0 ]; then
    order=(); for ((i=${#procs[@]}-1; i>=0; i--)); do order+=("${procs[$i]}"); done
  fi
  for pv in "${order[@]}"; do
    name=${pv%%|*}; v=${pv#*|}
    [ -x /tmp/f3modes/ab-$name ] || continue
    F3AB_ONLY=$v F3AB_REPS=$REPS F3AB_SUFFIX="@$name" env $DUMP_ENV timeout 120 /tmp/f3modes/ab-$name $CFGS 2>&1 |
      sed "s/^/r$r /" >> "$OUT/modes_raw.txt"
  done
done
echo "runs done: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/modes.txt"
grep " check " "$OUT/modes_raw.txt" >> "$OUT/modes.txt"
python3 - "$OUT/modes_raw.txt" >> "$OUT/modes.txt" <<'PY'
import re, statistics, sys, collections
rows = collections.defaultdict(list)
pat = re.compile(r"r(\d+) S=\s*(\d+) D=\s*(\d+) causal=(\d) (\S+)\s+[\d.]+ ms\s+([\d.]+) TFLOP/s")
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        rows[(int(m[2]), int(m[3]), int(m[4]))].append((m[5], int(m[1]), float(m[6])))
for cfg in sorted(rows, key=lambda c: (c[1], c[0], c[2])):
    per = collections.defaultdict(list)
    for name, r, tf in rows[cfg]:
        per[name].append(tf)
    names = list(per)
    base = statistics.median(per[names[0]])
    print(f"S={cfg[0]} D={cfg[1]} causal={cfg[2]}")
    for n in names:
        med = statistics.median(per[n])
        vals = " ".join(f"{x:6.1f}" for x in per[n])
        print(f"  {n:28s} median {med:6.1f} ({(med / base - 1) * 100:+5.1f} %)  per process: {vals}")
PY
if [ -n "$NCU" ]; then
  mkdir -p /tmp/f3modes/ncu
  for fdv in $NCU; do
    name=${fdv%%:*}; rest=${fdv#*:}; d=${rest%%:*}; v=${rest#*:}; tag=${name}_d${d}_${v//+/_}
    F3AB_ONLY=$v F3AB_REPS=1 timeout 90 ncu --clock-control none -k regex:bwd_kernel \
      --launch-skip 2 --launch-count 1 --import-source yes --section SourceCounters \
      --section WarpStateStats --section SpeedOfLight --section LaunchStats -f \
      -o /tmp/f3modes/ncu/$tag /tmp/f3modes/ab-$name 4096,$d,0 > /tmp/f3modes/ncu/$tag.log 2>&1
    echo "ncu $fdv rc=$?" | tee -a "$OUT/modes.txt"
    ncu --import /tmp/f3modes/ncu/$tag.ncu-rep --page details > /tmp/f3modes/ncu/$tag.details.txt 2>&1
    grep -E "Duration|Elapsed Cycles|SM Frequency|Warp Cycles Per Issued|Issued Warp|No Instruction|Stall" \
      /tmp/f3modes/ncu/$tag.details.txt | head -30 | sed "s/^/  [$tag] /" >> "$OUT/modes.txt"
    ncu --import /tmp/f3modes/ncu/$tag.ncu-rep --page source --csv --print-source sass \
      > /tmp/f3modes/ncu/$tag.src.csv 2>&1
    python3 bench/gpu/ncu_stall_summary.py < /tmp/f3modes/ncu/$tag.src.csv \
      > /tmp/f3modes/ncu/$tag.stalls.txt 2>&1
    head -40 /tmp/f3modes/ncu/$tag.stalls.txt | sed "s/^/  [$tag] /" >> "$OUT/modes.txt"
  done
  tar -C /tmp/f3modes -czf "$OUT/ncu.tgz" ncu
fi
tar -C /tmp/f3modes -czf "$OUT/build_logs.tgz" $(cd /tmp/f3modes && ls *.log)
echo "total $(( $(date +%s) - t0 )) s" | tee -a "$OUT/modes.txt"
cat "$OUT/modes.txt"
