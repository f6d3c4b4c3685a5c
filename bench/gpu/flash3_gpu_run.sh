#!/bin/bash
# One GPU-machine session for flash3: standalone build of the backend + its test + the bench
# shim (nvcc only, independent of the rest of the tree), tests, SASS check, sanitizer subset,
# peer benchmark. Usage: bench/gpu/flash3_gpu_run.sh [bench-args...]; logs under $OUT.
set -u
OUT=${OUT:-/tmp/flash3_out}
mkdir -p "$OUT"
B=build_f3
rm -rf $B && mkdir -p $B
ARCH="-gencode=arch=compute_90a,code=sm_90a"
# F3_DIMS (session 21): the head dims to build (default all; e.g. F3_DIMS=64 for a quick D 64
# check: ~1-2 min instead of ~2.5).
DIMS=${F3_DIMS:-64 128 256}
DEFS="-DATTNKIT_WITH_CUDA=1"
for d in $DIMS; do DEFS="$DEFS -DATTNKIT_FLASH3_D$d=1"; done
NV="nvcc -std=c++20 -O3 $ARCH -I include -I src $DEFS -Xcompiler -fPIC"
{
  for d in $DIMS; do
    for f in src/backends/flash3/instantiations/*_d${d}_*.cu; do
      echo "$NV -Xptxas -v -c $f -o $B/$(basename $f .cu).o"
    done
  done
  echo "$NV -x cu -c src/backends/flash3/backend.cpp -o $B/backend.o"
  echo "$NV -x cu -c src/cuda/workspace.cpp -o $B/workspace.o"
  echo "$NV -x cu -c bench/gpu/flash3_shim.cpp -o $B/shim.o"
  echo "$NV -c tests/backends/flash3/flash3_forward_test.cu -o $B/test.o"
} > $B/jobs.txt
t0=$(date +%s)
xargs -P 10 -I{} bash -c "{} 2>&1" < $B/jobs.txt > $OUT/build.log 2>&1
grep -E "error|C75|Used|spill|Compiling entry" $OUT/build.log | grep -v "^$" | head -60
nvcc $ARCH -o $B/flash3_test $B/test.o $B/backend.o $B/workspace.o $B/fwd_*.o $B/bwd_*.o -lgtest -lgtest_main -lpthread \
  >> $OUT/build.log 2>&1 || { echo "LINK test FAILED"; tail -30 $OUT/build.log; }
nvcc $ARCH -shared -o $B/libflash3_shim.so $B/shim.o $B/backend.o $B/workspace.o $B/fwd_*.o $B/bwd_*.o \
  >> $OUT/build.log 2>&1 || { echo "LINK shim FAILED"; tail -30 $OUT/build.log; }
echo "build: $(( $(date +%s) - t0 )) s"

echo "== SASS: HGMMA count per instantiation"
for o in $B/fwd_*.o; do
  echo "$(basename $o): HGMMA $(cuobjdump --dump-sass $o | grep -c HGMMA), LDL/STL $(cuobjdump --dump-sass $o | grep -cE 'LDL|STL')"
done
echo "== SASS: softmax before the P V wait? (bench/gpu/sass_softmax_order.py)"
for o in $B/fwd_d*_bf16.o; do cuobjdump --dump-sass $o | python3 bench/gpu/sass_softmax_order.py; done
[ "${F3_SASS_DUMP:-1}" = 1 ] && cuobjdump --dump-sass $B/fwd_d128_bf16.o > $OUT/sass_d128_bf16.txt 2>&1

echo "== tests (F3_TEST_SHARDS=${F3_TEST_SHARDS:-1} parallel gtest shards; filter ${F3_TEST_FILTER:-none})"
NS=${F3_TEST_SHARDS:-1}
for i in $(seq 0 $((NS - 1))); do
  GTEST_TOTAL_SHARDS=$NS GTEST_SHARD_INDEX=$i timeout ${F3_TEST_TIMEOUT:-200} $B/flash3_test \
    --gtest_brief=1 ${F3_TEST_FILTER:+--gtest_filter="$F3_TEST_FILTER"} > $OUT/test_$i.log 2>&1 &
done
wait
cat $OUT/test_*.log > $OUT/test.log; rm -f $OUT/test_*.log
echo "tests: $(grep -c '^\[       OK \]\|^\[  PASSED  \]' $OUT/test.log) lines; $(grep -E 'PASSED|FAILED' $OUT/test.log | tr '\n' ' ')"
grep -E "FAILED|SKIPPED|Failure|error|Expected|Which is|relative|max abs|lse" $OUT/test.log | head -60

if [ "${F3_SANITIZE:-1}" = 1 ]; then
  echo "== compute-sanitizer (subset)"
  # F3_SAN_EXTRA: more ':'-separated gtest cases (e.g. a new variant's) appended to the subset.
  FILT='Cases/Flash3Forward.MatchesReference/persist_b3_sq700_sk300_h16x4_d128_bf16_br:Cases/Flash3Forward.MatchesReference/gqa2_b1_sq77_sk300_h4x2_d128_bf16_br:Cases/Flash3Forward.MatchesReference/sq_gt_sk_b1_sq300_sk77_h2x1_d64_f16_br:Cases/Flash3Forward.MatchesReference/square_b2_sq128_sk128_h2x2_d256_bf16_nc:Cases/Flash3Forward.MatchesReference/pp_on_b2_sq900_sk700_h8x2_d64_bf16_tl:Cases/Flash3Forward.MatchesReference/sched_dyn_b3_sq100_sk200_h48x4_d64_bf16_br:Cases/Flash3Forward.MatchesReference/sched_dyn_b3_sq100_sk200_h48x4_d128_f16_br:Cases/Flash3Forward.MatchesReference/wgs3_b4_sq700_sk200_h40x8_d64_bf16_br:Cases/Flash3Forward.MatchesReference/serial_b4_sq700_sk200_h40x8_d128_bf16_br:Cases/Flash3Forward.MatchesReference/early_v3_b2_sq700_sk200_h16x4_d128_bf16_br:Cases/Flash3Forward.MatchesReference/early_v3_b2_sq700_sk200_h16x4_d256_bf16_br:Cases/Flash3Forward.MatchesReference/early_v3_b2_sq700_sk200_h16x4_d64_bf16_br:Cases/Flash3Forward.MatchesReference/sched_dyn_b2_sq100_sk100_h150x2_d64_bf16_nc_g2'
  [ -n "${F3_SAN_EXTRA:-}" ] && FILT="$FILT:$F3_SAN_EXTRA"
  for tool in memcheck racecheck; do  # both at once (independent processes)
    ( timeout ${F3_SAN_TIMEOUT:-120} compute-sanitizer --tool $tool --error-exitcode 9 $B/flash3_test \
        --gtest_filter="$FILT" > $OUT/sanitizer_$tool.log 2>&1
      echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/sanitizer_$tool.log | tr '\n' ' ')" ) &
  done
  wait
fi

if [ "${F3_BENCH:-1}" = 1 ]; then
  echo "== bench"
  timeout ${F3_BENCH_TIMEOUT:-240} python3 bench/gpu/flash3_vs_peers.py --lib $B/libflash3_shim.so \
    --json $OUT/bench.json "$@" 2>&1 | tee $OUT/bench.log | grep -vE "^\s*$" | tail -45
fi

if [ "${F3_CMAKE:-0}" = 1 ]; then
  echo "== official CMake build: test_flash3 (math oracle + check harness + flash3)"
  t0=$(date +%s)
  timeout ${F3_CMAKE_TIMEOUT:-200} bash -c 'cmake -S . -B build_cm -G Ninja -DATTNKIT_BACKENDS="math;flash3" \
      -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="64;128;256" -DATTNKIT_BUILD_CLI=OFF \
      > '"$OUT"'/cmake.log 2>&1 && ninja -C build_cm -j16 test_flash3 >> '"$OUT"'/cmake.log 2>&1'
  echo "cmake+ninja rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "error|FAILED" $OUT/cmake.log | head -20
  if [ -x build_cm/tests/test_flash3 ]; then
    timeout ${F3_HOSTILE_TIMEOUT:-150} build_cm/tests/test_flash3 --gtest_brief=1 > $OUT/test_flash3_cmake.log 2>&1
    echo "test_flash3 (cmake) rc=$?"
    grep -E "PASSED|FAILED|SKIPPED \]|tests ran" $OUT/test_flash3_cmake.log | head -20
    echo "skipped: $(grep -c '\[  SKIPPED \]' $OUT/test_flash3_cmake.log)"
  fi
fi
