# Session 66 call 2 (cold; v3 = main + ATTNKIT_FLASH3_FWD_D256_TMA_EPI 3 as the default: the D 256
# kernels without the row sums in P V, 29 and its multicast twin 69, stage O for TMA stores as at
# value 2; the row-sum kernels 38 / 39 / 79 keep value 1's code, static: slot 79 SASS-identical to
# value 1's, slot 69 to value 2's). The all-dims tree of the table (s63-call3.sh's flags, so that a
# warm call 3 reuses it) builds while two D 256 shims build (def = value 3, v1 = main's value 1);
# the tree runs the forward suites touched by the change (D 256 forward cases, the autos, the
# forward dropout / narrow / varlen suites, the split tail, row sums, skip-turn and reasons tests)
# + memcheck / racecheck on slot 29 and slot 69 cases; then, if they passed, the A/B (D 256, 512 to
# 4k, nc + causal, bitwise, def2 = the default shim timed twice).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="256" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b0.txt 2>&1 &
p0=$!
F3_DIMS="256" F3_DEFS="-DATTNKIT_FLASH3_FWD_D256_TMA_EPI=1" B=build_ab_v1 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b1.txt 2>&1 &
p1=$!
FWD='Cases/Flash3Forward.*_d256_*:*Auto*:Fwd/*:*SplitTail*:*RowSumsInPV*:*SkipMaskedTurn*:*Reasons*'
SAN='*d256tma_b2_sq1000_sk1000_h8x2_d256_bf16_nc*:*d256tma_b2_sq1024_sk1024_h16x2_d256*'
SM_BACKENDS="math;flash3;cudnn;cuda_math" SM_DIMS="64;128;256" SM_BENCH=0 SM_TEST_SHARDS=14 \
  SM_TEST_TIMEOUT=200 SM_SAN_TIMEOUT=150 SM_TEST_FILTER="$FWD" SM_SAN_FILTER="$SAN" \
  OUT=$OUT/t timeout 500 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
trc=$?
cat $OUT/tests.txt
echo "suites: rc=$trc at $(( $(date +%s) - t0 )) s"
{ cat $OUT/t/test.log $OUT/t/sanitizer_*.log; } > $OUT/testlogs.txt 2>/dev/null
grep -h "d256tma\|FAILED  \]" $OUT/t/test.log | head -8
grep -hE "^\[ RUN|Flash3Forward.*d256tma" $OUT/t/sanitizer_memcheck.log | head -4
rm -rf $OUT/t
wait $p0; wait $p1
cat $OUT/b0.txt $OUT/b1.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds done: $el s"
if [ "$trc" != 0 ]; then echo "A/B skipped: suites rc=$trc"; exit 0; fi
if [ $el -gt 470 ]; then echo "A/B left for call 2b: $el s"; exit 0; fi
timeout $(( 590 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so \
  --d 256 --s 512,1024,2048,4096 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --shim v1=build_ab_v1/libflash3_shim.so --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
grep -i "bits differing" $OUT/ab.txt | cut -c1-160 | head -8
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -26
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
