#!/bin/bash
# Session 23: where flash3's softcap reciprocal runs (score_mod.cuh ATTNKIT_FLASH3_SOFTCAP_RCP:
# 0 SFU = the default, 1 FMA pipe, 2 half and half), timed in one process; plus the full
# test_flash3 of the default build and the score-mod tests of variant 1. Three builds side by
# side: $SM_BUILD (default build_sm, as scoremod_run.sh), build_rcp1 (math, flash3; D 128/256;
# test_flash3 + libattnkit_c.so) and build_rcp2 (libattnkit_c.so only).
# Writes at most 8 files to $OUT: build.log, build_rcp.log, test.log, rcp1_tests.log, bench.log,
# bench.json, summary.txt.
#   OUT=... bash bench/gpu/flash3_softcap_ab.sh [scoremod_vs_peers.py args]
set -u
OUT=${OUT:-/tmp/flash3_softcap_out}
. "$(dirname "$0")/sm_common.sh"
B=${SM_BUILD:-build_sm}

t0=$(date +%s)
variant() {  # $1 = ATTNKIT_FLASH3_SOFTCAP_RCP, $2 = ninja targets
  cmake_tree build_rcp$1 "math;flash3" "128;256" "-DATTNKIT_FLASH3_SOFTCAP_RCP=$1" &&
    ninja -C build_rcp$1 $2
  echo "build_rcp$1 rc=$?"
}
(variant 1 "test_flash3 attnkit_c"; variant 2 attnkit_c) > "$OUT/build_rcp.log" 2>&1 &
cmake_tree $B "math;flash;flash3" "64;128;256" > "$OUT/build.log" 2>&1
ninja -C $B test_flash3 attnkit_c >> "$OUT/build.log" 2>&1
say "build rc=$? ($(($(date +%s) - t0)) s)"
wait
say "$(grep -h 'build_rcp. rc=' "$OUT/build_rcp.log" | tr '\n' ' ') ($(($(date +%s) - t0)) s)"
grep -E "error|FAILED" "$OUT/build.log" "$OUT/build_rcp.log" | head -20

t0=$(date +%s)
NS=${AB_TEST_SHARDS:-8}
for i in $(seq 0 $((NS - 1))); do
  GTEST_TOTAL_SHARDS=$NS GTEST_SHARD_INDEX=$i timeout ${AB_TEST_TIMEOUT:-230} \
    $B/tests/test_flash3 --gtest_brief=1 > "$OUT/test_$i.log" 2>&1 &
done
timeout 120 build_rcp1/tests/test_flash3 --gtest_brief=1 \
  --gtest_filter='*mod_*:*_cap*:Flash3Reasons.*' > "$OUT/rcp1_tests.log" 2>&1 &
wait
cat "$OUT"/test_*[0-9].log > "$OUT/test.log"
rm -f "$OUT"/test_*[0-9].log
pass=$(grep -h "PASSED" "$OUT/test.log" | grep -oE "[0-9]+ test" | awk '{s += $1} END {print s + 0}')
say "test_flash3 (default): $pass passed, $(grep -c '^\[  FAILED  \] .*\.' "$OUT/test.log") failed" \
  "($(($(date +%s) - t0)) s)"
grep -E "^\[  FAILED  \]|Failure|Expected|Which is" "$OUT/test.log" | head -20
say "test_flash3 (rcp 1, score-mod cases): $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' \
  "$OUT/rcp1_tests.log" | tr '\n' ' ')"

timeout ${AB_BENCH_TIMEOUT:-200} python3 bench/gpu/scoremod_vs_peers.py \
  --lib $B/libattnkit_c.so --lib2 _fma=build_rcp1/libattnkit_c.so \
  --lib2 _half=build_rcp2/libattnkit_c.so --json "$OUT/bench.json" "$@" > "$OUT/bench.log" 2>&1
say "bench rc=$?"
grep -vE "^\s*$|Warning|warn|^W1" "$OUT/bench.log" | tail -20 | tee -a "$S"
