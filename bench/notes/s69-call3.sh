# Session 69 call 3 (cold, ~420 s): wip/split69's split last tile (bench/notes/fwd-d64-split-tail-s69.md,
# (Ran on branch wip/split69; on main: `git apply bench/patches/f3-split-last-s69.patch` first.)
# slot 135, Tuning::split_last; helper-75's draft call, not kept, with the two builds in parallel
# and a second default copy in the A/B). 1. D 64 test tree (math, flash3, cuda_math) and a
# D 64 shim, built at once. 2. The split suite (40 cases, slot asserted) and the D 64 forward suite;
# memcheck + racecheck on 4 split cases. 3. flash3_knob_ab.py def / split:1 / def2 at D 64 nc S 1024 /
# 4096 (1-s blocks, 3 rounds), then flash3_tail_probe.py --partial --split-last (2 rounds).
# Predictions: bench/notes/session69.md, call 3.
set -u
export PATH=$PATH:/usr/local/cuda/bin
. bench/gpu/sm_common.sh
t0=$(date +%s)
( cmake_tree build_sp "math;flash3;cuda_math" "64" > $OUT/build.log 2>&1
  ninja -C build_sp -j16 test_flash3 > /tmp/ninja.log 2>&1 || { tail -30 /tmp/ninja.log >> $OUT/build.log; echo BUILD FAILED; grep -E "error" /tmp/ninja.log | head; } ) &
F3_DIMS="64" B=build_p64 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1 &
wait
grep -iE " error" $OUT/shim.log | head -5
echo "builds $(( $(date +%s) - t0 )) s"
T=build_sp/tests
timeout 200 $T/test_flash3 --gtest_brief=1 --gtest_filter='Fwd/Flash3SplitLast.*' > $OUT/split_tests.log 2>&1
echo "split tests rc=$?"; tail -4 $OUT/split_tests.log; grep -E "^\[  FAILED" $OUT/split_tests.log | head -5
timeout 200 $T/test_flash3 --gtest_brief=1 --gtest_filter='Cases/Flash3Forward.*d64*' > $OUT/fwd_d64.log 2>&1
echo "fwd d64 rc=$?"; tail -3 $OUT/fwd_d64.log; grep -E "^\[  FAILED" $OUT/fwd_d64.log | head -5
SF='Fwd/Flash3SplitLast.MatchesOracle/r40_gqa2_on*:Fwd/Flash3SplitLast.MatchesOracle/only_partial_on_grid3:Fwd/Flash3SplitLast.MatchesOracle/r1_mqa_masked_on_dyn:Fwd/Flash3SplitLast.MatchesOracle/r64_3blocks_on'
for tool in memcheck racecheck; do
  ( timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $T/test_flash3 --gtest_brief=1 \
    --gtest_filter="$SF" > $OUT/san_$tool.log 2>&1; echo "$tool rc=$?" >> $OUT/san_$tool.log ) &
done
wait
for tool in memcheck racecheck; do grep -hE "rc=|SUMMARY|PASSED|tests ran" $OUT/san_$tool.log; done
echo "tests $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/gpu/flash3_knob_ab.py --lib build_p64/libflash3_shim.so --d 64 \
  --s 1024,4096 --causal 0 --rounds 3 --blocks 1.0 --variant def= --variant split=split:1 \
  --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"; grep -h "W, cap\|W)" $OUT/ab.txt | grep " r[12] " | cut -c1-200 | head -20
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -8
timeout 120 python3 bench/gpu/flash3_tail_probe.py --lib build_p64/libflash3_shim.so --partial \
  --split-last --rounds 2 --reps 60 > $OUT/partial_split.txt 2>&1
echo "probe rc=$?"; grep -E "Sk=|Sq=10|Sq=40" $OUT/partial_split.txt | cut -c1-220
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit --format=csv >> $OUT/ab.txt
echo "total: $(( $(date +%s) - t0 )) s"
