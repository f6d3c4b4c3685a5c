# Session 70 call 1 (prepared in session 69, never run; cold, ~260 s): the split last tile's v2
# (bench/patches/f3-split-last-v2-s69.patch on top of f3-split-last-s69.patch): each own block's
# P V issued right after its softmax instead of deferred to the next own Q K^T, so a private V
# stage (single-buffered) reloads while its owner runs the next Q K^T and softmax, not after the
# round (the static reading of calls 3-4's loss: bench/notes/fwd-d64-split-tail-s69.md, "v2").
# Static: slot 135 at 128 registers, 68 B spill stores / 48 B loads (v1: 72 / 52), split loop
# 422 instructions (v1 431), steady ring loop 802 (slot 134: 818). Then the same measurements as
# session 69 call 4 plus the S 16384 row (slot 135's whole tiles: -1 % in session 69 call 5).
# Predictions to write first (bench/notes/session70.md): probe X at S_q 1024 0.40-0.55 (v1:
# 0.84-0.95 probe, ~0.65 in blocks); split / def at 1k +1.5..+3.5 % (the split tile's saving less
# the whole tiles' ~0.9 %), 4k -0.5..+0.5 %, 16k -0.5..-1.5 %. An auto (kSplitLastAuto plus a
# bound on S_q) only at >= +3 % at 1k in both rounds; below +1 %: drop the split for good.
set -u
export PATH=$PATH:/usr/local/cuda/bin
. bench/gpu/sm_common.sh
t0=$(date +%s)
# (every call copies the tree afresh: apply unless already applied)
if git apply --check bench/patches/f3-split-last-s69.patch 2>/dev/null; then
  git apply bench/patches/f3-split-last-s69.patch && git apply bench/patches/f3-split-last-v2-s69.patch
fi
( cmake_tree build_sp "math;flash3;cuda_math" "64" > $OUT/build.log 2>&1
  ninja -C build_sp -j16 test_flash3 > /tmp/ninja.log 2>&1 || { tail -30 /tmp/ninja.log >> $OUT/build.log; echo BUILD FAILED; grep -E "error" /tmp/ninja.log | head; } ) &
F3_DIMS="64" B=build_p64 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1 &
wait
grep -iE " error" $OUT/shim.log | head -5
grep -qiE " error|FAILED" $OUT/shim.log $OUT/build.log || rm -f $OUT/shim.log $OUT/build.log
echo "builds $(( $(date +%s) - t0 )) s"
T=build_sp/tests
timeout 200 $T/test_flash3 --gtest_brief=1 --gtest_filter='Fwd/Flash3SplitLast.*:Sm90Ptx.*' > $OUT/split_tests.log 2>&1
echo "split tests rc=$?"; tail -4 $OUT/split_tests.log; grep -E "^\[  FAILED" $OUT/split_tests.log | head -5
SF='Fwd/Flash3SplitLast.MatchesOracle/r40_gqa2_on*:Fwd/Flash3SplitLast.MatchesOracle/only_partial_on_grid3:Fwd/Flash3SplitLast.MatchesOracle/r1_mqa_masked_on_dyn:Fwd/Flash3SplitLast.MatchesOracle/r64_3blocks_on'
for tool in memcheck racecheck; do
  ( timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $T/test_flash3 --gtest_brief=1 \
    --gtest_filter="$SF" > $OUT/san_$tool.log 2>&1; echo "$tool rc=$?" >> $OUT/san_$tool.log ) &
done
wait
for tool in memcheck racecheck; do grep -hE "rc=|SUMMARY|PASSED|tests ran" $OUT/san_$tool.log; done
echo "tests $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/gpu/flash3_knob_ab.py --lib build_p64/libflash3_shim.so --d 64 \
  --s 1024,4096,16384 --causal 0 --rounds 3 --blocks 1.0 --variant def= --variant split=split:1 \
  --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"; grep -h "W, cap" $OUT/ab.txt | grep " r[12] " | cut -c1-200 | head -24
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -10
timeout 120 python3 bench/gpu/flash3_tail_probe.py --lib build_p64/libflash3_shim.so --partial \
  --split-last --rounds 2 --reps 60 > $OUT/partial_split.txt 2>&1
echo "probe rc=$?"; grep -E "Sk=|Sq=10|Sq=40" $OUT/partial_split.txt | cut -c1-220
echo "total: $(( $(date +%s) - t0 )) s"
