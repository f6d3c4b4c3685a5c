#!/bin/bash
# One device session for the flash3 forward (issue #5 final run): the standalone build + own tests
# + sanitizer subset + peer benchmark (flash3_gpu_run.sh), with the official CMake build of
# test_flash3 (math oracle + hostile harness) compiled in the background while the correctness
# phases run, joined before the benchmark so the timings see a quiet machine, and the hostile
# tests run after it. Usage: OUT=... bench/gpu/flash3_full_run.sh [bench-args...]
set -u
OUT=${OUT:-/tmp/flash3_out}
mkdir -p "$OUT"
t0=$(date +%s)
( timeout ${F3_CMAKE_TIMEOUT:-240} bash -c 'cmake -S . -B build_cm -G Ninja -DATTNKIT_BACKENDS="math;flash3" \
    -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="64;128;256" -DATTNKIT_BUILD_CLI=OFF \
    > '"$OUT"'/cmake.log 2>&1 && nice ninja -C build_cm -j8 ${F3_CMAKE_TARGETS:-test_flash3} >> '"$OUT"'/cmake.log 2>&1'
  echo "cmake+ninja rc=$? ($(( $(date +%s) - t0 )) s)" >> "$OUT"/cmake.log ) &
CM=$!
F3_BENCH=0 F3_SASS_DUMP=0 bash bench/gpu/flash3_gpu_run.sh
echo "== waiting for the CMake build ($(( $(date +%s) - t0 )) s)"
wait $CM
tail -1 "$OUT"/cmake.log; grep -E "error|FAILED" "$OUT"/cmake.log | head -10
B=build_f3
echo "== bench ($(( $(date +%s) - t0 )) s)"
timeout ${F3_BENCH_TIMEOUT:-200} python3 bench/gpu/flash3_vs_peers.py --lib $B/libflash3_shim.so \
  --json $OUT/bench.json "$@" 2>&1 | tee $OUT/bench.log | grep -vE "^\s*$" | tail -120
if [ -x build_cm/tests/test_flash3 ]; then
  echo "== test_flash3 (official CMake build: math oracle + hostile harness) ($(( $(date +%s) - t0 )) s)"
  timeout ${F3_HOSTILE_TIMEOUT:-120} build_cm/tests/test_flash3 --gtest_brief=1 > $OUT/test_flash3_cmake.log 2>&1
  echo "test_flash3 rc=$?"
  grep -E "PASSED|FAILED|tests ran" $OUT/test_flash3_cmake.log | head -20
  echo "skipped: $(grep -c '\[  SKIPPED \]' $OUT/test_flash3_cmake.log)"
fi
echo "total $(( $(date +%s) - t0 )) s"
