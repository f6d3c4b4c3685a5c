#!/bin/bash
# One device call for the whole flash3 backend (forward and backward) on the merged tree:
#   1. bench/gpu/flash3_full_run.sh: standalone build + own forward tests + forward sanitizer
#      subset + forward peer table with A/B knobs + the official CMake test_flash3 (math oracle,
#      hostile harness, backward tests);
#   2. compute-sanitizer memcheck + racecheck on backward cases of the CMake test_flash3;
#   3. bench/peers.py backward (and forward) rows: attnkit flash3 vs torch cuDNN and FA2.
# The device returns at most 8 files: every log goes into $OUT/logs.tgz, the two JSON tables
# and summary.txt beside it. Usage: OUT=... bench/gpu/flash3_session.sh [forward bench args]
set -u
FINAL_OUT=${OUT:-/tmp/flash3_session}
W=/tmp/flash3_session_logs
rm -rf "$W" && mkdir -p "$W" "$FINAL_OUT"
S="$FINAL_OUT/summary.txt"
t0=$(date +%s)
export F3_CMAKE_TARGETS="test_flash3 attnkit_c"
OUT=$W bash bench/gpu/flash3_full_run.sh "$@" 2>&1 | tee "$W/full_run.log" | tail -80

echo "== backward sanitizer ($(( $(date +%s) - t0 )) s)" | tee -a "$S"
FILT='*Sm90BwdPtx*:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleCoupled/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOracleDqAtomics/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Hostile*bf16_bshd_b2_sq13_sk13_h2x1_d64_causalTL_bwd:*Flash3Backward.MatchesOracleCoupledDqFirst/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleBm128/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOracleBm128DqFirstBulk/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracleBm128DqFirstShfl/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalBR_bwd:*Flash3Backward.MatchesOracleDecoupledDqFirst/bf16_bshd_b1_sq300_sk517_h4x2_d64_none_bwd:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq300_sk517_h4x2_d64_none_bwd:*Flash3Backward.MatchesOraclePrefetch/bf16_bshd_b1_sq300_sk517_h4x2_d64_none_bwd:*Flash3Backward.MatchesOraclePrefetch/f16_bshd_b2_sq517_sk300_h2x1_d128_causalBR_bwd:*Flash3Backward.MatchesOracleDecoupledBulkPrefetch/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracle/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd'
for tool in memcheck racecheck; do
  timeout "${F3_SAN_BWD_T:-75}" compute-sanitizer --tool $tool --error-exitcode 9 \
    build_cm/tests/test_flash3 --gtest_filter="$FILT" --gtest_brief=1 > "$W/san_bwd_$tool.log" 2>&1
  echo "bwd $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$W/san_bwd_$tool.log" | tr '\n' ' ')" | tee -a "$S"
done

echo "== peers backward ($(( $(date +%s) - t0 )) s)" | tee -a "$S"
if [ -f build_cm/libattnkit_c.so ]; then
  PYTHONUNBUFFERED=1 timeout "${F3_PEERS_T:-150}" python3 bench/peers.py --lib build_cm/libattnkit_c.so \
    --backends flash3 --peers cudnn,flash --shapes ${F3_PEERS_S:-1k,4k,16k} --d 64,128 \
    --causal both --passes bwd --pause 0.2 --no-preflight --commit "${ATTNKIT_COMMIT:-}" \
    --json "$FINAL_OUT/peers_bwd.json" --md "$W/peers_bwd.md" > "$W/peers_bwd.log" 2>&1
  echo "peers rc=$?" | tee -a "$S"
  python3 bench/peers.py --summarize "$FINAL_OUT/peers_bwd.json" | tee -a "$S"
fi
grep -E "test_flash3 rc|PASSED|FAILED|skipped:|memcheck rc|racecheck rc" "$W/full_run.log" | head -20 >> "$S"
[ -f "$W/bench.json" ] && cp "$W/bench.json" "$FINAL_OUT/fwd_bench.json"
tar czf "$FINAL_OUT/logs.tgz" -C "$W" . 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s" | tee -a "$S"
