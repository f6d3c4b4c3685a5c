# Session 69 call 4 (cold, ~300 s): the split last tile after call 3's two findings (bench/notes/
# (Ran on branch wip/split69; on main: `git apply bench/patches/f3-split-last-s69.patch` first.)
# session69.md): its producer now polls the six (K or V, warpgroup) private-stage streams with
# mbarrier.test_wait and issues whichever is free (call 3's fixed order coupled the warpgroups:
# the split tile took 0.83-0.92 of a whole tile), and each warpgroup's use count is written after
# the merge's first barrier (call 3's racecheck hazard). Call 3's script without the D 64 forward
# suite (whole tiles unchanged since; it passed there), plus the new mbar_test_wait unit test.
# SPLIT_S: the A/B's sequence lengths (default 1024,4096, as it ran; s70-call1.sh adds 16384).
set -u
export PATH=$PATH:/usr/local/cuda/bin
. bench/gpu/sm_common.sh
t0=$(date +%s)
( cmake_tree build_sp "math;flash3;cuda_math" "64" > $OUT/build.log 2>&1
  ninja -C build_sp -j16 test_flash3 > /tmp/ninja.log 2>&1 || { tail -30 /tmp/ninja.log >> $OUT/build.log; echo BUILD FAILED; grep -E "error" /tmp/ninja.log | head; } ) &
F3_DIMS="64" B=build_p64 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1 &
wait
grep -iE " error" $OUT/shim.log | head -5
# (at most 8 files come back: the build logs only when something failed)
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
  --s "${SPLIT_S:-1024,4096}" --causal 0 --rounds 3 --blocks 1.0 --variant def= --variant split=split:1 \
  --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"; grep -h "W, cap" $OUT/ab.txt | grep " r[12] " | cut -c1-200 | head -24
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -8
timeout 120 python3 bench/gpu/flash3_tail_probe.py --lib build_p64/libflash3_shim.so --partial \
  --split-last --rounds 2 --reps 60 > $OUT/partial_split.txt 2>&1
echo "probe rc=$?"; grep -E "Sk=|Sq=10|Sq=40" $OUT/partial_split.txt | cut -c1-220
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit --format=csv >> $OUT/ab.txt
echo "total: $(( $(date +%s) - t0 )) s"
