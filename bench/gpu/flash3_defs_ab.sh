#!/bin/bash
# One device call for a same-process A/B of forward build switches (session 16): builds the
# flash3 bench shim once with the defaults (build_ab_def) and once per NAME=DEFS argument
# (build_ab_NAME, flash3_shim_only.sh with F3_DEFS=DEFS), all at once, then times the default
# build's defaults and every other build's defaults in one loop with cuDNN
# (flash3_knob_ab.py --shim), each variant's first output checked against cuDNN's.
# Usage: OUT=dir [F3_DIMS="64 128 256"] [AB_ARGS="--d 256 --s 1024,4096 --causal 0"]
#        [AB_EXTRA="--variant diet=diet:1 --shim x_diet=build_ab_x/libflash3_shim.so@diet:1"]
#        bash bench/gpu/flash3_defs_ab.sh NAME="-DATTNKIT_FLASH3_...=1" [NAME=DEFS ...]
# (session 16 used it with the since-removed -DATTNKIT_FLASH3_FWD_ORDERED=1 / =2)
# Writes $OUT/ab.json, ab.txt and the build logs.
set -u
OUT=${OUT:-/tmp/f3_defs_ab}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
DIMS=${F3_DIMS:-64 128 256}
AB_ARGS=${AB_ARGS:---d 256,128,64 --s 1024,4096,16384 --causal 0,1 --rounds 2}
t0=$(date +%s)
pids=()
F3_DIMS="$DIMS" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > "$OUT/build_def.txt" 2>&1 &
pids+=($!)
shims=()
for spec in "$@"; do
  name=${spec%%=*}
  defs=${spec#*=}
  F3_DIMS="$DIMS" F3_DEFS="$defs" B=build_ab_$name bash bench/gpu/flash3_shim_only.sh \
    > "$OUT/build_$name.txt" 2>&1 &
  pids+=($!)
  shims+=(--shim "$name=build_ab_$name/libflash3_shim.so")
done
for p in "${pids[@]}"; do wait "$p"; done  # (wait on PIDs: pgrep -f matches this command line)
cat "$OUT"/build_*.txt
grep -hiE "error" build_ab_*/build.log | sort | uniq -c | head -8
echo "builds: $(( $(date +%s) - t0 )) s"
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so $AB_ARGS \
  --variant def= "${shims[@]}" ${AB_EXTRA:-} --json "$OUT/ab.json" 2>&1 | tee "$OUT/ab.txt"
echo "total: $(( $(date +%s) - t0 )) s"
