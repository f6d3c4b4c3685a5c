#!/bin/bash
# Session 23: flash's softcap tanh on the SFU (cuda/sfu_math.cuh tanh_exp2) against libm's tanhf
# (build switch ATTNKIT_FLASH_LIBM_TANH=1), forward and backward, in one process, beside flash3
# and FlexAttention; and flash's softcap tests. Two builds side by side:
#   $SM_BUILD (default build_sm, as bench/gpu/scoremod_run.sh: math, flash, flash3; D 64/128/256;
#             test_flash, test_flash3, libattnkit_c.so) and
#   build_libm (math, flash; D 128/256; the switch on; libattnkit_c.so only).
# Writes at most 8 files to $OUT: build.log, build_libm.log, test_flash.log, bench.log, bench.json,
# summary.txt.
#   OUT=... bash bench/gpu/flash_tanh_ab.sh [scoremod_vs_peers.py args]
set -u
OUT=${OUT:-/tmp/flash_tanh_out}
. "$(dirname "$0")/sm_common.sh"
B=${SM_BUILD:-build_sm}

t0=$(date +%s)
(cmake_tree build_libm "math;flash" "128;256" "-DATTNKIT_FLASH_LIBM_TANH=1" \
  -DATTNKIT_BUILD_TESTS=OFF > "$OUT/build_libm.log" 2>&1 &&
  ninja -C build_libm attnkit_c >> "$OUT/build_libm.log" 2>&1
  echo "build_libm rc=$?" >> "$OUT/build_libm.log") &
cmake_tree $B "math;flash;flash3" "64;128;256" > "$OUT/build.log" 2>&1
ninja -C $B test_flash test_flash3 attnkit_c >> "$OUT/build.log" 2>&1
say "build rc=$? ($(($(date +%s) - t0)) s)"
wait
say "$(tail -1 "$OUT/build_libm.log") ($(($(date +%s) - t0)) s)"
grep -E "error|FAILED" "$OUT/build.log" "$OUT/build_libm.log" | head -20

# flash's softcap cases (check harness: forward, lse and backward against the math oracle).
t0=$(date +%s)
timeout ${AB_TEST_TIMEOUT:-200} $B/tests/test_flash --gtest_brief=1 \
  --gtest_filter="${AB_TEST_FILTER:-*softcap*}" > "$OUT/test_flash.log" 2>&1
say "test_flash (${AB_TEST_FILTER:-*softcap*}) rc=$? ($(($(date +%s) - t0)) s):" \
  "$(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|tests ran' "$OUT/test_flash.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is" "$OUT/test_flash.log" | head -20

timeout ${AB_BENCH_TIMEOUT:-330} python3 bench/gpu/scoremod_vs_peers.py --lib $B/libattnkit_c.so \
  --lib2 _libm=build_libm/libattnkit_c.so --json "$OUT/bench.json" "$@" > "$OUT/bench.log" 2>&1
say "bench rc=$?"
grep -vE "^\s*$|Warning|warn|^W1" "$OUT/bench.log" | tail -30 | tee -a "$S"
