#!/bin/bash
# Session 3 device call (issue #5 forward): standalone build + own tests (+ sanitizer subset when
# F3_SANITIZE=1, + the CMake test_flash3 when F3_CMAKE=1) -> ncu profile (flash3_prof_run.sh,
# skipped when PROF_SHAPES is empty) -> flash3_vs_peers table with the session-3 A/B set.
# Every phase has its own timeout; all logs end up in $OUT/logs.tgz, the ncu report beside it.
# (F3_CMAKE is not passed on to flash3_gpu_run.sh: in the final run it was, and that script then
# re-ran its own CMake block + unsharded test_flash3 until phase 1 timed out, after the tests and
# the sanitizer had finished.)
# Usage: OUT=... PROF_SHAPES=... PROF_VARS=... BENCH_ARGS="..." bench/gpu/flash3_s3_run.sh
set -u
OUT=${OUT:-/tmp/f3}; export OUT; mkdir -p $OUT
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
if [ "${F3_CMAKE:-0}" = 1 ]; then
  ( timeout ${F3_CMAKE_TIMEOUT:-240} bash -c 'cmake -S . -B build_cm -G Ninja -DATTNKIT_BACKENDS="math;flash3" \
      -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="64;128;256" -DATTNKIT_BUILD_CLI=OFF \
      > '"$OUT"'/cmake.log 2>&1 && nice ninja -C build_cm -j6 test_flash3 >> '"$OUT"'/cmake.log 2>&1'
    echo "cmake+ninja rc=$? ($(( $(date +%s) - t0 )) s)" >> $OUT/cmake.log ) &
  CM=$!
fi
F3_CMAKE=0 F3_BENCH=0 F3_SASS_DUMP=0 F3_SANITIZE=${F3_SANITIZE:-0} timeout ${P1_TIMEOUT:-200} bash bench/gpu/flash3_gpu_run.sh > $OUT/phase1.log 2>&1
echo "phase1 rc=$? $(( $(date +%s) - t0 )) s"
for o in build_f3/fwd_d*_bf16.o; do echo "== $o"; cuobjdump -sass $o | python3 bench/gpu/sass_count.py ELb1ELi0ELi2ELi2E; done > $OUT/sass_count.txt 2>&1
if [ -n "${PROF_SHAPES:-}" ]; then
  timeout ${P2_TIMEOUT:-130} bash bench/gpu/flash3_prof_run.sh "$PROF_SHAPES" "${PROF_VARS:-}" > $OUT/phase2.log 2>&1
  echo "phase2 rc=$? $(( $(date +%s) - t0 )) s"
fi
[ "${F3_CMAKE:-0}" = 1 ] && { wait $CM; tail -1 $OUT/cmake.log; }
timeout ${P3_TIMEOUT:-110} python3 bench/gpu/flash3_vs_peers.py --lib build_f3/libflash3_shim.so \
  --json $OUT/bench.json ${BENCH_ARGS:-} > $OUT/bench.log 2>&1
echo "phase3 rc=$? $(( $(date +%s) - t0 )) s"
if [ "${F3_CMAKE:-0}" = 1 ] && [ -x build_cm/tests/test_flash3 ]; then
  NS=${F3_TEST_SHARDS:-1}
  for i in $(seq 0 $((NS - 1))); do
    GTEST_TOTAL_SHARDS=$NS GTEST_SHARD_INDEX=$i timeout ${F3_HOSTILE_TIMEOUT:-150} build_cm/tests/test_flash3 \
      --gtest_brief=1 > $OUT/tf3_$i.log 2>&1 &
  done
  wait
  cat $OUT/tf3_*.log > $OUT/test_flash3_cmake.log; rm -f $OUT/tf3_*.log
  echo "test_flash3 (cmake, $NS shards): $(grep -E 'PASSED|FAILED' $OUT/test_flash3_cmake.log | tr '\n' ' ') skipped $(grep -c '\[  SKIPPED \]' $OUT/test_flash3_cmake.log)"
  echo "hostile $(( $(date +%s) - t0 )) s"
fi
echo "===== phase1 (build, SASS, tests, sanitizer)"
grep -E "build:|HGMMA|rc=|FAILED|PASSED|tests:|error|SUMMARY|C75" $OUT/phase1.log | grep -v "bwd_kernel" | head -40
echo "===== SASS counts (default tiles, 2 WGs, 2 V stages: variants 0, 8 = legacy desc, cluster)"
grep -E "==|ILi0EEE|ILi8EEE|ILi0ELi2EEE" $OUT/sass_count.txt | head -20
echo "===== phase2 (ncu)"
grep -E "^-- launch|^   |ncu rc|by opcode|prof D" $OUT/phase2.log | cut -c1-400 | head -80
echo "===== phase3 (bench)"
grep -vE "^\s*$" $OUT/bench.log | tail -70
cd $OUT && rm -f sass_d128_bf16.txt && tar czf /tmp/logs.tgz --exclude '*.ncu-rep' --exclude bench.json . ; \
  find . -maxdepth 1 -type f ! -name '*.ncu-rep' ! -name bench.json ! -name bench.log ! -name test_flash3_cmake.log -delete; \
  mv /tmp/logs.tgz .
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
