# Session 71 call 2 (cold, ~330 s): Tuning::multicast_tail's auto (-1: the D 128 multicast twin
# takes the split tail from kMulticastTail128MinSeqlenK = 8192 keys; branch wip/s71-mctail).
# 1. A D 128 + 256 test tree and a D 128 shim at once. 2. The mc / mctail / tail forward cases
# (the new mctail_auto case: D 128 twin + tail on default knobs, D 256 twin alone), memcheck on the
# D 128 mctail_auto case. 3. flash3_knob_ab.py def (the auto) / off (mctail:0, main's default) /
# on (mctail:1) / def2 at D 128 non-causal 4k / 6k / 8k / 12k / 16k (1-s blocks, 3 rounds, bitwise).
set -u
export PATH=$PATH:/usr/local/cuda/bin
. bench/gpu/sm_common.sh
t0=$(date +%s)
( cmake_tree build_rc "math;flash3;cuda_math" "128;256" > $OUT/build.log 2>&1
  ninja -C build_rc -j16 test_flash3 > /tmp/ninja.log 2>&1 || { tail -30 /tmp/ninja.log >> $OUT/build.log; echo BUILD FAILED; grep -E "error" /tmp/ninja.log | head; } ) &
F3_DIMS="128" B=build_p2 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1 &
wait
grep -iE " error" $OUT/shim.log | head -5
grep -qiE " error|FAILED" $OUT/shim.log $OUT/build.log || rm -f $OUT/shim.log $OUT/build.log
echo "builds $(( $(date +%s) - t0 )) s"
F='Cases/Flash3Forward.*mc*:Cases/Flash3Forward.*tail*:Cases/Flash3Forward.*long*'
timeout 200 build_rc/tests/test_flash3 --gtest_filter="$F" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED) " $OUT/tests.log | head -12
grep -cE "^\[       OK .*mctail_auto" $OUT/tests.log
timeout 120 compute-sanitizer --tool memcheck build_rc/tests/test_flash3 \
  --gtest_filter='Cases/Flash3Forward.*mctail_auto*d128*' > $OUT/memcheck.log 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | head -4
echo "tests $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/gpu/flash3_knob_ab.py --lib build_p2/libflash3_shim.so --d 128 \
  --s 4096,6144,8192,12288,16384 --causal 0 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --variant off=mctail:0 --variant on=mctail:1 --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json off 2>&1 | tail -16
echo "total: $(( $(date +%s) - t0 )) s"
