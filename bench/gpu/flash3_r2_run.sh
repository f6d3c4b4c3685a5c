#!/bin/bash
# Round-2 device call (issue #5 forward, helper f3fwd4): standalone build + own forward tests
# (sharded) -> sanitizer (memcheck + racecheck) on the new D = 256 128-key-tile cases -> SASS
# counts -> the A/B table (flash3 default / kv128 / cuDNN interleaved, same process; round 3:
# --ab-set s3r3 adds the K/V chunk ring, SAN_FILT its sanitizer cases).
# Every phase has its own timeout; logs end up in $OUT/logs.tgz, the table in bench.log/json.
# Usage: OUT=... BENCH_ARGS="..." bench/gpu/flash3_r2_run.sh
set -u
OUT=${OUT:-/tmp/f3}; export OUT; mkdir -p $OUT
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
F3_CMAKE=0 F3_BENCH=0 F3_SASS_DUMP=0 F3_SANITIZE=0 F3_TEST_SHARDS=${F3_TEST_SHARDS:-4} \
  timeout ${P1_TIMEOUT:-200} bash bench/gpu/flash3_gpu_run.sh > $OUT/phase1.log 2>&1
echo "phase1 rc=$? $(( $(date +%s) - t0 )) s"
# SAN_FILT: the sanitizer's gtest filter (default: round 2's kv128 cases; round 3 passes kv128r).
FILT=${SAN_FILT:-'Cases/Flash3Forward.MatchesReference/kv128_b1_sq77_sk300_h4x2_d256_bf16_br:Cases/Flash3Forward.MatchesReference/kv128_b1_sq300_sk77_h2x1_d256_bf16_tl:Cases/Flash3Forward.MatchesReference/kv128_b2_sq128_sk128_h2x2_d256_bf16_nc:Cases/Flash3Forward.MatchesReference/kv128_b2_sq700_sk517_h16x4_d256_f16_nc'}
for tool in memcheck racecheck; do
  ( timeout ${SAN_TIMEOUT:-90} compute-sanitizer --tool $tool --error-exitcode 9 build_f3/flash3_test \
      --gtest_filter="$FILT" > $OUT/sanitizer_$tool.log 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/sanitizer_$tool.log | tr '\n' ' ')" ) &
done
wait
echo "sanitizer $(( $(date +%s) - t0 )) s"
for o in build_f3/fwd_d256_bf16.o build_f3/fwd_d128_bf16.o; do
  echo "== $o"; cuobjdump -sass $o | python3 bench/gpu/sass_count.py ELb1ELi; done > $OUT/sass_count.txt 2>&1
timeout ${P3_TIMEOUT:-150} python3 bench/gpu/flash3_vs_peers.py --lib build_f3/libflash3_shim.so \
  --json $OUT/bench.json ${BENCH_ARGS:-} > $OUT/bench.log 2>&1
echo "phase3 rc=$? $(( $(date +%s) - t0 )) s"
echo "===== phase1 (build, tests)"
grep -E "build:|HGMMA|rc=|FAILED|PASSED|tests:|error|C75|spill" $OUT/phase1.log | grep -v "bwd_kernel" | head -40
echo "===== sanitizer"; grep -E "rc=|SUMMARY" $OUT/sanitizer_*.log | head; tail -3 $OUT/sanitizer_*.log
echo "===== phase3 (bench)"
grep -vE "^\s*$" $OUT/bench.log | tail -60
cd $OUT && tar czf /tmp/logs.tgz --exclude bench.json . ; \
  find . -maxdepth 1 -type f ! -name bench.json ! -name bench.log -delete; mv /tmp/logs.tgz .
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
