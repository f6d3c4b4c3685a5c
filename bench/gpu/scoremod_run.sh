#!/bin/bash
# Session 23: flash3's softcap / ALiBi / sliding-window forward (launch.cuh
# launch_forward_score_mod) on the GPU machine, in one call:
#   1. CMake build (math, flash, flash3; D 64/128/256; sm_90a): test_flash3 and libattnkit_c.so
#      in $SM_BUILD (default build_sm; kept, so a second call on a warm machine rebuilds nothing);
#   2. test_flash3 in SM_TEST_SHARDS parallel shards (default 8), filter SM_TEST_FILTER (default:
#      every test; SM_TESTS=0: skip);
#   3. compute-sanitizer memcheck + racecheck on a few score-mod cases (SM_SANITIZE=0: skip);
#   4. the benchmark (bench/gpu/scoremod_vs_peers.py "$@"; SM_BENCH=0: skip).
# After the build, one summary line counts the flash3 backward's ATOMG dQ adds
# (tools/sass_atomics.sh; session 32).
# Session 24 (bench/gpu/varlen_run.sh sets them): SM_BACKENDS (default "math;flash;flash3"),
# SM_DIMS (ATTNKIT_HEAD_DIMS, default "64;128;256"),
# SM_BENCH_PY (default bench/gpu/scoremod_vs_peers.py), SM_SAN_FILTER (the sanitizer's gtest
# filter; default: the four score-mod cases below).
# Session 33: SM_CUDA_FLAGS (CMAKE_CUDA_FLAGS of the tree, e.g. an A/B build switch
# "-DATTNKIT_FLASH3_FWD_<NAME>=1", so the tests run on the switched kernels).
# Writes at most 8 files to $OUT: build.log, test.log, sanitizer_{memcheck,racecheck}.log,
# bench.log, bench.json, summary.txt.
# Exit status (session 65): 1 = the build failed, or a test shard failed / timed out, or no test
# passed; 2 = a sanitizer run failed; 3 = both. The benchmark's status does not count.
#   OUT=... bash bench/gpu/scoremod_run.sh [--d 128,256 --s 1k,4k,16k --mods cap,win ...]
set -u
OUT=${OUT:-/tmp/scoremod_out}
. "$(dirname "$0")/sm_common.sh"
B=${SM_BUILD:-build_sm}

t0=$(date +%s)
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -1
  git rev-parse --short HEAD
} > "$OUT/build.log" 2>&1
cmake_tree $B "${SM_BACKENDS:-math;flash;flash3}" "${SM_DIMS:-64;128;256}" "${SM_CUDA_FLAGS:-}" \
  >> "$OUT/build.log" 2>&1
if ninja -C $B -j"$(nproc)" test_flash3 attnkit_c >> "$OUT/build.log" 2>&1; then
  say "build: ok ($(($(date +%s) - t0)) s)"
else
  say "build: FAILED ($(($(date +%s) - t0)) s)"
  grep -E "error|FAILED" "$OUT/build.log" | head -30
  exit 1
fi

# Session 32: how the flash3 backward's dQ adds compiled (tools/sass_atomics.sh): ATOMG in any
# flash3 bwd_kernel means a GPU-scope fence crept in and costs 6-20 % at D 64 / 128.
objs=$(find $B -name 'bwd_d*.cu.o' -path '*flash3*' 2>/dev/null)
if [ -n "$objs" ]; then
  if bash tools/sass_atomics.sh $objs > "$OUT/sass_atomics.txt" 2>&1; then
    say "dQ adds: $(tail -1 "$OUT/sass_atomics.txt")"
  else
    say "dQ adds: WARNING $(tail -1 "$OUT/sass_atomics.txt")"
  fi
  rm -f "$OUT/sass_atomics.txt"
fi

T=$B/tests/test_flash3
rc=0  # the exit status: 1 = a test failed (or none passed), 2 = a sanitizer run failed, 3 = both
if [ "${SM_TESTS:-1}" = 1 ]; then
  NS=${SM_TEST_SHARDS:-8}
  t0=$(date +%s)
  for i in $(seq 0 $((NS - 1))); do
    (GTEST_TOTAL_SHARDS=$NS GTEST_SHARD_INDEX=$i timeout ${SM_TEST_TIMEOUT:-300} $T --gtest_brief=1 \
      ${SM_TEST_FILTER:+--gtest_filter="$SM_TEST_FILTER"} > "$OUT/test_$i.log" 2>&1 ||
      echo "shard $i: exit status $? (124: SM_TEST_TIMEOUT)" >> "$OUT/.shards_failed") &
  done
  wait
  if [ -e "$OUT/.shards_failed" ]; then
    say "$(cat "$OUT/.shards_failed")"
    rc=1
    rm -f "$OUT/.shards_failed"
  fi
  cat "$OUT"/test_*.log > "$OUT/test.log"
  rm -f "$OUT"/test_*.log
  pass=$(grep -h "PASSED" "$OUT/test.log" | grep -oE "[0-9]+ test" | awk '{s += $1} END {print s + 0}')
  fail=$(grep -c "^\[  FAILED  \] .*\." "$OUT/test.log")
  # (Session 39: the sum of each shard's "[  SKIPPED ] N tests." line. Until then this counted
  # those lines, one per shard: "12 skipped" in sessions 26-38 meant 12 shards, not 12 tests.)
  skip=$(grep -hE "^\[  SKIPPED \] [0-9]+ test" "$OUT/test.log" | awk '{s += $4} END {print s + 0}')
  say "test_flash3: $pass passed, $fail failed lines, $skip skipped ($(($(date +%s) - t0)) s)"
  # (Session 65: until then nothing below the build set the exit status, so "gate on the exit
  # status" (sessions 63-64) gated on the build only. Now: 1 = a failed test or none passed.)
  if [ "$fail" != 0 ] || [ "$pass" = 0 ]; then rc=1; fi
  grep -E "^\[  FAILED  \]|Failure|Expected|Which is|error" "$OUT/test.log" | head -40
fi

if [ "${SM_SANITIZE:-1}" = 1 ]; then
  F='Cases/Flash3Forward.MatchesReference/mod_b1_sq300_sk450_h4x2_d128_bf16_nc_w37_11'
  F="$F:Cases/Flash3Forward.MatchesReference/mod_b2_sq300_sk420_h8x2_d64_bf16_br_bhsd_pad_cap15_w100_20_alibiBH"
  F="$F:Cases/Flash3Forward.MatchesReference/mod_b2_sq700_sk900_h8x2_d256_bf16_tl_g3_cap20_w200_inf"
  F="$F:Cases/Flash3Forward.MatchesReference/sched_dyn_b2_sq700_sk900_h8x2_d128_bf16_nc_w64_64_alibiH"
  F=${SM_SAN_FILTER:-$F}
  for tool in memcheck racecheck; do
    (timeout ${SM_SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 $T \
      --gtest_filter="$F" > "$OUT/sanitizer_$tool.log" 2>&1
    r=$?
    [ $r = 0 ] || touch "$OUT/.san_failed"
    echo "$tool rc=$r $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' \
      "$OUT/sanitizer_$tool.log" | tr '\n' ' ')" | tee -a "$S") &
  done
  wait
  if [ -e "$OUT/.san_failed" ]; then rc=$((rc | 2)); rm -f "$OUT/.san_failed"; fi
fi

if [ "${SM_BENCH:-1}" = 1 ]; then
  timeout ${SM_BENCH_TIMEOUT:-300} python3 ${SM_BENCH_PY:-bench/gpu/scoremod_vs_peers.py} \
    --lib $B/libattnkit_c.so --json "$OUT/bench.json" "$@" > "$OUT/bench.log" 2>&1
  say "bench rc=$?"
  grep -vE "^\s*$|Warning|warn" "$OUT/bench.log" | tail -30 | tee -a "$S"
fi
exit $rc
