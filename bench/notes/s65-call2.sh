# Session 65 call 2 (cold or warm; main + the session-65 host changes: one rank-templated tensor-map
# encoder for every TMA map, the D 256 launch's O-map decision from the kernel's traits, and
# Tuning::tma_epilogue = 0 keeping STG in the D 256 staged kernels): the whole test_flash3 at
# D 64 / 128 / 256 (every flash3 TMA map goes through the new encoder) + memcheck / racecheck on
# the new d256tma_stg cases, while two D 256 shims build (main's default = ATTNKIT_FLASH3_FWD_D256_
# TMA_EPI 1, and value 2 = every plain 64-key kernel staged); then, if the suites passed and time is
# left, the split A/B of slot 79's loss: value 2 with its TMA stores (v2) and with STG in the same
# layout (v2@tmaepi:0) against main (def), and causal 119's gain with STG in its layout
# (defstg = tmaepi:0).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="256" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b0.txt 2>&1 &
p0=$!
F3_DIMS="256" F3_DEFS="-DATTNKIT_FLASH3_FWD_D256_TMA_EPI=2" B=build_ab_v2 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b1.txt 2>&1 &
p1=$!
SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="64;128;256" SM_BENCH=0 SM_TEST_SHARDS=14 \
  SM_TEST_TIMEOUT=280 SM_SAN_TIMEOUT=100 \
  SM_SAN_FILTER='*d256tma_stg_b2_sq1000_sk1000*:*tmaepi_b3_sq333_sk100_h48x4_d128*' \
  OUT=$OUT/t timeout 560 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
trc=$?
cat $OUT/tests.txt
echo "suites: rc=$trc at $(( $(date +%s) - t0 )) s"
{ cat $OUT/t/test.log $OUT/t/sanitizer_*.log; } > $OUT/testlogs.txt 2>/dev/null
grep -h "d256tma_stg\|FAILED  \]" $OUT/t/test.log | head -8
rm -rf $OUT/t
wait $p0; wait $p1
cat $OUT/b0.txt $OUT/b1.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds done: $el s"
if [ "$trc" != 0 ]; then echo "A/B skipped: suites rc=$trc"; exit 0; fi
if [ $el -gt 450 ]; then echo "A/B left for call 2b: $el s"; exit 0; fi
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so --d 256 \
  --s 1024,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --variant defstg=tmaepi:0 --shim v2=build_ab_v2/libflash3_shim.so \
  --shim v2stg=build_ab_v2/libflash3_shim.so@tmaepi:0 --variant def2= \
  --json $OUT/ab.json > $OUT/ab.txt 2>&1
grep -i "bits differing" $OUT/ab.txt | head -6
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -20
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
