# Session 72 call 1 (prepared in session 71 after the device time; cold, ~450 s): land
# bench/patches/f3-mctail256-s71.patch (the multicast-tail auto at D 256 from 16384 keys;
# session 71 call 4: +0.4 / +0.5 / +0.5 % at D 256 nc 16k, none at 8k) with its tests and the table.
# 1. The all-dims tree with the CLI and the Python module (s71-call3.sh's build). 2. test_flash3
# filtered to the mc / mctail / tail cases (the new D 256 mctail_auto case at 16484 keys expects
# the tail, the one at 8292 none), memcheck on the D 256 mctail_auto cases. 3. The forward table
# (100 x 5, every row). 4. helper-76's lead: q_prefetch 0 at D 256 causal 1k / 4k (knob A/B on a
# D 256 shim built alongside). Predictions (write them in bench/notes/session72.md first): the filtered
# cases pass; D 256 nc 16k ~+0.5 % over session 71's 1.098; every other row within the spread.
set -u
export PATH=$PATH:/usr/local/cuda/bin
. bench/gpu/sm_common.sh
t0=$(date +%s)
if git apply --check bench/patches/f3-mctail256-s71.patch 2>/dev/null; then
  git apply bench/patches/f3-mctail256-s71.patch
fi
bash src/backends/cudnn/get_frontend.sh > /dev/null 2>&1 || true
# (a D 256 shim alongside, for step 4: helper-76's parked-gain lead, fwd-parked-gains-s71.md #2)
F3_DIMS="256" B=build_p3 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1 &
cmake_tree build_sm "math;flash3;cudnn;cuda_math" "64;128;256" "" -DATTNKIT_BUILD_PYTHON=ON \
  -DATTNKIT_BUILD_CLI=ON -DPython_EXECUTABLE=$(command -v python3) > $OUT/build.log 2>&1
ninja -C build_sm -j16 > /tmp/ninja.log 2>&1 || { tail -30 /tmp/ninja.log >> $OUT/build.log; echo BUILD FAILED; grep -E "error" /tmp/ninja.log | head; }
tail -3 /tmp/ninja.log >> $OUT/build.log
echo "build $(( $(date +%s) - t0 )) s"
F='Cases/Flash3Forward.*mc*:Cases/Flash3Forward.*tail*'
timeout 200 build_sm/tests/test_flash3 --gtest_filter="$F" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED) " $OUT/tests.log | head -12
grep -E "^\[       OK .*mctail_auto" $OUT/tests.log | head -8
timeout 90 compute-sanitizer --tool memcheck build_sm/tests/test_flash3 \
  --gtest_filter='Cases/Flash3Forward.*mctail_auto*sk16484*d256_bf16*' > $OUT/memcheck.log 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | head -4
echo "tests $(( $(date +%s) - t0 )) s"
wait
grep -iE " error" $OUT/shim.log | head -3
# (at most 8 files come back: drop the build logs when clean)
grep -qiE " error|FAILED" $OUT/shim.log $OUT/build.log || rm -f $OUT/shim.log $OUT/build.log
# 4. q_prefetch 0 at D 256 causal (session 53: +0.6 / +0.8 % at causal 1k on slot 109; the auto
# is 4 from an H100 session-14 A/B). Lands (host auto) only at >= +0.5 % at 1k in rounds 1 and 2
# and nothing below -0.3 % at 4k.
timeout 90 python3 bench/gpu/flash3_knob_ab.py --lib build_p3/libflash3_shim.so --d 256 \
  --s 1024,4096 --causal 1 --rounds 3 --blocks 1.0 --bitwise --variant def= --variant qpf0=qpf:0 \
  --variant def2= --json $OUT/ab_qpf.json > $OUT/ab_qpf.txt 2>&1
echo "ab rc=$?"; python3 bench/gpu/flash3_ab_ratios.py $OUT/ab_qpf.json def 2>&1 | tail -7
timeout 240 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' \
  --d 64,128,256 --shapes 1k,4k,16k --causal both --runs 100 --rounds 5 --preheat 0.5 --pause 0 \
  --clocks --passes fwd --json $OUT/fwd100.json > $OUT/fwd100.txt 2>&1
grep -E "^fwd .*\|  " $OUT/fwd100.txt | grep -v "\*" | head -18
echo "total $(( $(date +%s) - t0 )) s"; ls $OUT
