# Session 70 call 3 (cold, ~250 s): Tuning::round_table (lpt_schedule.hpp build_round_table,
# launch.cuh round_table_wanted; host code only, the kernels' table path unchanged): the D 64
# non-causal rotated rounds rebalanced round by round. 1. D 64 test tree (math, flash3,
# cuda_math) and a D 64 shim at once. 2. The D 64 forward suite (its "rtab*" cases assert where
# the table ran; every other non-causal D 64 case with a partial last m block runs the auto);
# memcheck on two rtab cases. 3. Which schedule the timed shapes run (the round table's rounds).
# 4. flash3_knob_ab.py def (the auto) / rot (rtab:0, the rotated rounds) / def2 at D 64 nc S 1024
# / 2048 / 4096 (1-s blocks, 3 rounds; 4096 runs the split tail, which drops the table: a control).
# Predictions: bench/notes/session70.md, call 3.
set -u
export PATH=$PATH:/usr/local/cuda/bin
. bench/gpu/sm_common.sh
t0=$(date +%s)
( cmake_tree build_rt "math;flash3;cuda_math" "64" > $OUT/build.log 2>&1
  ninja -C build_rt -j16 test_flash3 > /tmp/ninja.log 2>&1 || { tail -30 /tmp/ninja.log >> $OUT/build.log; echo BUILD FAILED; grep -E "error" /tmp/ninja.log | head; } ) &
F3_DIMS="64" B=build_p64 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1 &
wait
grep -iE " error" $OUT/shim.log | head -5
grep -qiE " error|FAILED" $OUT/shim.log $OUT/build.log || rm -f $OUT/shim.log $OUT/build.log
echo "builds $(( $(date +%s) - t0 )) s"
T=build_rt/tests
timeout 240 $T/test_flash3 --gtest_brief=1 --gtest_filter='Cases/Flash3Forward.*d64*' > $OUT/fwd_d64.log 2>&1
echo "fwd d64 rc=$?"; tail -3 $OUT/fwd_d64.log; grep -E "^\[  FAILED" $OUT/fwd_d64.log | head -8
grep -c "rtab" $OUT/fwd_d64.log
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_flash3 --gtest_brief=1 \
  --gtest_filter='Cases/Flash3Forward.*rtab_b2_sq1000*:Cases/Flash3Forward.*rtab_b3_sq400*' > $OUT/san_memcheck.log 2>&1
echo "memcheck rc=$?"; grep -hE "SUMMARY|PASSED" $OUT/san_memcheck.log
echo "tests $(( $(date +%s) - t0 )) s"
python3 - <<'PY' 2>&1 | tee $OUT/which.txt
import ctypes, sys, torch
sys.path.insert(0, "bench/gpu")
from flash3_vs_peers import load, make_flash3
fn, set_tuning = load("build_p64/libflash3_shim.so")
lib = ctypes.CDLL("build_p64/libflash3_shim.so")
lib.flash3_last_round_table.restype = ctypes.c_int
for s in (1024, 2048, 4096, 16384):
    b = 16384 // s
    q = torch.randn(b, s, 32, 64, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(q)
    lse = torch.empty(b, 32, s, device="cuda", dtype=torch.float32)
    for rt in (-1, 0):
        set_tuning(rtab=rt)
        make_flash3(fn, q, q, q, out, lse, False)()
        torch.cuda.synchronize()
        print(f"S {s} rtab {rt}: slot {set_tuning.last_slot()}, round table rounds {lib.flash3_last_round_table()}")
set_tuning()
PY
timeout 240 python3 bench/gpu/flash3_knob_ab.py --lib build_p64/libflash3_shim.so --d 64 \
  --s 1024,2048,4096 --causal 0 --rounds 3 --blocks 1.0 --variant def= --variant rot=rtab:0 \
  --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"; grep -h "W, cap" $OUT/ab.txt | grep " r[12] " | cut -c1-200 | head -24
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -10
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit --format=csv >> $OUT/ab.txt
echo "total: $(( $(date +%s) - t0 )) s"
