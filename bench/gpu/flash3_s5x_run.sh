#!/bin/bash
# Session-5 device call (helper f3fwd10; used for its Tuning::soft_exp A/B at aa2dba7, the knob is
# gone since): standalone build -> own forward tests (sharded, full suite) with the sanitizer
# (memcheck + racecheck on SAN_FILT) started as soon as the build is linked, next to the tests
# -> the interleaved A/B table (BENCH_ARGS, e.g. --ab-set s5q) -> ncu with the time left (flash3
# default, cuDNN, NCU_VARS at NCU_SHAPES; per-opcode stall reasons, ncu_stall_summary.py, and the
# raw source pages tarred into ncu.tgz so they come back). It replaces f3fwd9's flash3_s5_run.sh
# (same variables; that one ran the sanitizer after the tests and also wrote hgmma_forms.txt).
# P1_TIMEOUT covers build + SASS checks + the test shards: GNU timeout signals its whole process
# group, so a P1_TIMEOUT shorter than that kills the shards and their (block-buffered) logs come
# back empty (f3fwd10 run 1: build 84 s, P1_TIMEOUT=180, 5 of 8 shards lost). Keep >= 220 s.
# Usage: OUT=... BENCH_ARGS="..." SAN_FILT=... NCU_SHAPES=128:4096:0 NCU_VARS=base \
#   bench/gpu/flash3_s5x_run.sh
set -u
OUT=${OUT:-/tmp/f3}; export OUT; mkdir -p $OUT
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
F3_CMAKE=0 F3_BENCH=0 F3_SASS_DUMP=0 F3_SANITIZE=0 F3_TEST_SHARDS=${F3_TEST_SHARDS:-8} \
  F3_TEST_TIMEOUT=${F3_TEST_TIMEOUT:-120} timeout ${P1_TIMEOUT:-230} bash bench/gpu/flash3_gpu_run.sh \
  > $OUT/phase1.log 2>&1 &
p1=$!
# The sanitizer runs beside the tests once both binaries are linked ("build:" line of phase 1).
until grep -q "^build:" $OUT/phase1.log 2>/dev/null || ! kill -0 $p1 2>/dev/null; do sleep 2; done
echo "build done $(( $(date +%s) - t0 )) s"
FILT=${SAN_FILT:-'Cases/Flash3Forward.MatchesReference/uniform_b4_sq700_sk200_h40x8_d128_bf16_br'}
for tool in memcheck racecheck; do
  ( timeout ${SAN_TIMEOUT:-70} compute-sanitizer --tool $tool --error-exitcode 9 build_f3/flash3_test \
      --gtest_filter="$FILT" > $OUT/sanitizer_$tool.log 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/sanitizer_$tool.log | tr '\n' ' ')" ) &
done
wait
echo "phase1 + sanitizer $(( $(date +%s) - t0 )) s"
timeout ${P3_TIMEOUT:-100} python3 bench/gpu/flash3_vs_peers.py --lib build_f3/libflash3_shim.so \
  --json $OUT/bench.json ${BENCH_ARGS:-} > $OUT/bench.log 2>&1
echo "phase3 rc=$? $(( $(date +%s) - t0 )) s"
echo "===== phase1 (build, tests)"
grep -E "build:|rc=|FAILED|PASSED|tests:|error|C75|spill" $OUT/phase1.log | grep -v "bwd_kernel" | head -30
echo "===== sanitizer"; grep -E "rc=|SUMMARY" $OUT/sanitizer_*.log | head; tail -2 $OUT/sanitizer_*.log
echo "===== phase3 (bench)"
grep -vE "^\s*$" $OUT/bench.log | tail -80
(cd $OUT && tar czf /tmp/logs.tgz --exclude bench.json --exclude bench.log . && \
  find . -maxdepth 1 -type f ! -name bench.json ! -name bench.log -delete && mv /tmp/logs.tgz .)
left=$(( ${NCU_END:-280} - ($(date +%s) - t0) ))
echo "ncu budget ${left} s"
if [ $left -gt 45 ]; then
  F3_NCU_COUNT=${F3_NCU_COUNT:-3} F3_NCU_TIMEOUT=$(( left - 25 )) \
    timeout $(( left - 5 )) bash bench/gpu/flash3_prof_run.sh "${NCU_SHAPES:-128:4096:0}" \
    "${NCU_VARS:-}" > $OUT/prof.log 2>&1
  echo "ncu rc=$? $(( $(date +%s) - t0 )) s"
  echo "===== ncu"; grep -E "^-- launch|^   |ncu rc|prof D=" $OUT/prof.log | head -30
  for f in $OUT/stall_*.txt; do [ -s "$f" ] && { echo "== $f"; grep -E "^total|^by opcode|^reasons" "$f"; }; done
  # (f3fwd10 run 1: the per-opcode reason sums crashed on short rows, so the raw source pages
  # go into the archive too: per-line stall reasons can be re-summed here.)
  cp /tmp/src_*.csv $OUT/ 2>/dev/null
  (cd $OUT && tar czf ncu.tgz stall_*.txt src_*.csv ncu_run.log ncu_details.csv 2>/dev/null && \
    rm -f stall_*.txt src_*.csv ncu_run.log ncu_details.csv prof.ncu-rep)
fi
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
