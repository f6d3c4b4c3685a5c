#!/bin/bash
# Same-call A/B of one flash compile-time knob: one attnkit_c build per value (math + flash,
# sm_90a, no tests), then peers.py against FA-2 (torch SDPA FLASH_ATTENTION) per build, in the
# order given (repeat a value to interleave processes), each with --rounds.
# Usage: OUT=dir KNOB=ATTNKIT_FLASH_... VALUES="0 7 7 0" [DIMS="64;128;256"] [ROUNDS=2]
#        [BENCH="--shapes 512,1k,2k --d 64,128,256 --causal both --passes fwd"]
#        bash bench/gpu/flash_knob_ab.sh
# Writes $OUT/ab-<i>-<v>.json per process and $OUT/ab_logs.tgz (builds, tables, logs: the lent
# machine returns at most 8 files); prints every table last.
# TEST_VALUE=v (optional): also builds test_flash with KNOB=v (same parallel build phase) and,
# after the benchmarks, runs it on TEST_FILTER and compute-sanitizer memcheck + racecheck on
# SAN_FILTER (T_TESTS / T_SAN seconds each), so a candidate default is tested in the same call.
set -u
OUT=${OUT:?OUT}
KNOB=${KNOB:?KNOB}
VALUES=${VALUES:?VALUES}
DIMS=${DIMS:-64;128;256}
ROUNDS=${ROUNDS:-2}
BENCH=${BENCH:---shapes 512,1k,2k --d 64,128,256 --causal both --passes fwd}
mkdir -p "$OUT/logs"
uniq_vals=$(echo $VALUES | tr ' ' '\n' | sort -u)
n=$(echo $uniq_vals | wc -w)
jobs=$(( $(nproc) / n )); [ $jobs -lt 1 ] && jobs=1
t0=$(date +%s)
for v in $uniq_vals; do
  ( cmake -S . -B build-ab$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNKIT_CUDA=ON \
      -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="$DIMS" -DATTNKIT_BACKENDS="math;flash" \
      -DATTNKIT_BUILD_TESTS=OFF -DATTNKIT_BUILD_CLI=OFF -DCMAKE_CUDA_FLAGS="-D$KNOB=$v" &&
    cmake --build build-ab$v -j $jobs --target attnkit_c ) > "$OUT/logs/build-$v.log" 2>&1 &
done
if [ -n "${TEST_VALUE:-}" ]; then
  ( cmake -S . -B build-t -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNKIT_CUDA=ON \
      -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="$DIMS" -DATTNKIT_BACKENDS="math;flash" \
      -DATTNKIT_BUILD_CLI=OFF -DCMAKE_CUDA_FLAGS="-D$KNOB=$TEST_VALUE" &&
    cmake --build build-t -j $jobs --target test_flash ) > "$OUT/logs/build-test.log" 2>&1 &
fi
wait
echo "builds: $(( $(date +%s) - t0 )) s"
commit=${ATTNKIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}  # the lent copy's .git may lag
i=0
for v in $VALUES; do
  i=$((i + 1))
  [ -f build-ab$v/libattnkit_c.so ] || { echo "build $v failed"; tail -n 20 "$OUT/logs/build-$v.log"; continue; }
  python3 bench/peers.py --lib build-ab$v/libattnkit_c.so --backends flash --peers flash \
    --pause 0.5 --no-preflight --rounds $ROUNDS --commit "$commit $KNOB=$v" $BENCH \
    --json "$OUT/ab-$i-$v.json" --md "$OUT/logs/ab-$i-$v.md" > "$OUT/logs/ab-$i-$v.log" 2>&1
  echo "process $i ($KNOB=$v) rc=$? ($(( $(date +%s) - t0 )) s)"
done
if [ -n "${TEST_VALUE:-}" ]; then
  T=$(find build-t -name test_flash -type f | head -1)
  if [ -z "$T" ]; then
    echo "test build failed"; tail -n 20 "$OUT/logs/build-test.log"
  else
    timeout "${T_TESTS:-200}" "$T" --gtest_filter="${TEST_FILTER:-*}" --gtest_brief=1 \
      > "$OUT/logs/test.log" 2>&1
    echo "tests ($KNOB=$TEST_VALUE) rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]' "$OUT/logs/test.log" | tr '\n' ' ')"
    grep -E "^\[  FAILED  \]" "$OUT/logs/test.log" | head -20
    if [ -n "${SAN_FILTER:-}" ]; then
      for tool in memcheck racecheck; do
        timeout "${T_SAN:-120}" compute-sanitizer --tool $tool --error-exitcode 9 "$T" \
          --gtest_filter="$SAN_FILTER" --gtest_brief=1 > "$OUT/logs/$tool.log" 2>&1
        echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/logs/$tool.log" | tail -1) $(grep -E '^\[  PASSED  \]' "$OUT/logs/$tool.log")"
      done
    fi
  fi
fi
tar -C "$OUT" -czf "$OUT/ab_logs.tgz" logs && rm -rf "$OUT/logs/build-"*
for f in "$OUT"/logs/ab-*.md; do echo "== $f"; sed -n '/^```$/,/^```$/p' "$f"; done
rm -rf "$OUT/logs"
