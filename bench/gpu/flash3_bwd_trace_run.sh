#!/bin/bash
# Session 27 (for session 28's first call): the flash3 D 256 backward's per-item clock64 trace.
# Builds math + flash3 at D 256 with ATTNKIT_FLASH3_BWD_TRACE (a measurement build: BwdArgs gains
# the trace pointer, the kernel stamps its items; the default build's SASS is unchanged) in
# $B (default build_trace, ~70 s), then bench/gpu/flash3_bwd_trace.py "$@". Writes $OUT/trace.txt.
#   OUT=dir bash bench/gpu/flash3_bwd_trace_run.sh [--shapes 1k,4k --causal no,yes]
set -u
OUT=${OUT:-/tmp/bwd_trace}
. "$(dirname "$0")/sm_common.sh"
B=${B:-build_trace}
t0=$(date +%s)
cmake_tree $B "math;flash3" "256" -DATTNKIT_FLASH3_BWD_TRACE=1 \
  -DCMAKE_CXX_FLAGS=-DATTNKIT_FLASH3_BWD_TRACE=1 > "$OUT/build.log" 2>&1
if ninja -C $B -j"$(nproc)" attnkit_c >> "$OUT/build.log" 2>&1; then
  say "build: ok ($(($(date +%s) - t0)) s)"
else
  say "build: FAILED"
  grep -E "error" "$OUT/build.log" | head -20
  exit 1
fi
timeout ${TRACE_TIMEOUT:-200} python3 bench/gpu/flash3_bwd_trace.py --lib $B/libattnkit_c.so "$@" \
  2>&1 | tee "$OUT/trace.txt"
