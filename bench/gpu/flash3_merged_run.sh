#!/bin/bash
# One device call for flash3 forward + backward on a merged tree (the lead's end-of-session run):
#   1. bench/gpu/flash3_s3_run.sh with the CMake build: standalone build, own forward tests
#      (sharded), forward sanitizer subset, the forward table vs cuDNN / FA-2 with an A/B set,
#      the CMake test_flash3 (math oracle, hostile harness, backward tests) in shards;
#   2. compute-sanitizer memcheck + racecheck on backward cases of the CMake test_flash3;
#   3. bench/peers.py backward rows (flash3 vs torch cuDNN and FA-2) with the library defaults,
#      then the same D = 64 rows again under ATTNKIT_FLASH3_BWD_VARIANT=$F3B_AB_VARIANT (A/B).
# At most 8 files come back: logs go into $OUT/logs.tgz; the tables and summary.txt beside it.
# Session 22: with the 1,137-case forward suite, phase 1 alone (build + tests + sanitizer beside
# the niced CMake build) plus the table and the test_flash3 shards took more than 588 s, and an
# outer `timeout 588` killed it before any summary line: on a 600 s call, run the CMake
# test_flash3 on its own (bench/results/2026-11-23-h100-flash3-s22.md, call 7) instead.
# Usage: OUT=... F3B_AB_VARIANT="64:decoupled+atomic+kv" BENCH_ARGS="..." flash3_merged_run.sh
set -u
FINAL_OUT=${OUT:-/tmp/flash3_merged}
W=/tmp/flash3_merged_logs
rm -rf "$W" && mkdir -p "$W" "$FINAL_OUT"
S="$FINAL_OUT/summary.txt"
t0=$(date +%s)
el() { echo "== [$(($(date +%s) - t0)) s] $*" | tee -a "$S"; }

el "forward: flash3_s3_run.sh (build, tests, sanitizer, table, CMake test_flash3)"
# Session 7: 8 shards, 240 s each (4 shards of the grown suite took up to ~150 s each and one was
# cut by a 150 s F3_HOSTILE_TIMEOUT; 8 shards finished in 51-80 s each).
OUT=$W/fwd F3_CMAKE=1 F3_SANITIZE=1 F3_TEST_SHARDS=${F3_TEST_SHARDS:-8} \
  F3_HOSTILE_TIMEOUT=${F3_HOSTILE_TIMEOUT:-240} PROF_SHAPES= \
  bash bench/gpu/flash3_s3_run.sh > "$W/fwd_run.log" 2>&1
grep -E "test_flash3 \(cmake|rc=|SUMMARY|tests:|FAILED|HGMMA" "$W/fwd_run.log" | head -30 | tee -a "$S"
# flash3_s3_run.sh builds only test_flash3 in build_cm; peers.py needs the C library too.
( ninja -C build_cm -j16 attnkit_c > "$W/attnkit_c.log" 2>&1; echo "attnkit_c rc=$?" ) | tee -a "$S"

el "backward sanitizer"
# Session 5: non-causal cases are named ..._d64_bwd (the old ..._none_bwd never matched); the
# library defaults (mask hoist, D 64 causal on the 128-row kernel) run in MatchesOracle/*.
FILT='*Sm90BwdPtx*:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleBm128DqFirstBulk/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracleCoupledDqFirst/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleDqAtomics/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracleKVRegs*/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracle/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq512_sk512_h2x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq512_sk512_h2x2_d128_causalTL_bwd:*Flash3Backward.MatchesOracleV4RotOtherDq/bf16_bshd_b1_sq300_sk517_h4x2_d128_bwd:*Hostile*bf16_bshd_b2_sq13_sk13_h2x1_d64_causalTL_bwd'
for tool in memcheck racecheck; do
  timeout "${F3_SAN_BWD_T:-75}" compute-sanitizer --tool $tool --error-exitcode 9 \
    build_cm/tests/test_flash3 --gtest_filter="$FILT" --gtest_brief=1 > "$W/san_bwd_$tool.log" 2>&1
  echo "bwd $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$W/san_bwd_$tool.log" | tr '\n' ' ')" | tee -a "$S"
done

peers() {  # $1 = json name, rest = peers.py arguments
  local name=$1; shift
  PYTHONUNBUFFERED=1 timeout "${F3_PEERS_T:-150}" python3 bench/peers.py --lib build_cm/libattnkit_c.so \
    --backends flash3 --peers cudnn,flash --passes bwd --causal both --pause 0.2 --no-preflight \
    --commit "${ATTNKIT_COMMIT:-}" --json "$FINAL_OUT/$name.json" --md "$W/$name.md" "$@" \
    > "$W/$name.log" 2>&1
  echo "peers $name rc=$?" | tee -a "$S"
  python3 bench/peers.py --summarize "$FINAL_OUT/$name.json" | tee -a "$S"
}
if [ -f build_cm/libattnkit_c.so ]; then
  el "peers backward (library defaults)"
  peers peers_bwd --shapes ${F3_PEERS_S:-1k,4k,16k} --d 64,128
  if [ -n "${F3B_AB_VARIANT:-}" ]; then
    el "peers backward A/B: ATTNKIT_FLASH3_BWD_VARIANT=$F3B_AB_VARIANT"
    ATTNKIT_FLASH3_BWD_VARIANT=$F3B_AB_VARIANT peers peers_bwd_ab --shapes 4k,16k --d 64
  fi
fi
el "forward table"
grep -vE "^\s*$" "$W/fwd/bench.log" | tail -70 | tee -a "$S" > /dev/null
cp "$W/fwd/bench.json" "$FINAL_OUT/fwd_bench.json" 2>/dev/null
tar czf "$FINAL_OUT/logs.tgz" -C "$W" . 2>/dev/null
el "total"
cat "$S" | tail -120
