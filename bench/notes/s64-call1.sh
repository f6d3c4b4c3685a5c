# Session 64 call 1 (cold; wip/tma = main a7bd988 + f3d256tmaepi-64.patch): four D 256 shims
# (A/B default / tma, tile trace default / tma) build in the background while the D 256 suites
# with ATTNKIT_FLASH3_FWD_D256_TMA_EPI=1 build and run (+ memcheck / racecheck on two d256tma
# cases); then, only if the suites passed (scoremod_run.sh's exit status), the A/B (nc + causal,
# 1k-16k, outputs compared bit for bit) and the tile trace of both builds (nc 1k / 4k, causal 1k).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
TMA="-DATTNKIT_FLASH3_FWD_D256_TMA_EPI=1"
F3_DIMS="256" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b1.txt 2>&1 &
p1=$!
F3_DIMS="256" F3_DEFS="$TMA" B=build_ab_tma bash bench/gpu/flash3_shim_only.sh > $OUT/b2.txt 2>&1 &
p2=$!
F3_TRACE=1 F3_DIMS="256" B=build_trace bash bench/gpu/flash3_shim_only.sh > $OUT/b3.txt 2>&1 &
p3=$!
F3_TRACE=1 F3_DIMS="256" F3_DEFS="$TMA" B=build_trace_tma \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b4.txt 2>&1 &
p4=$!
SM_CUDA_FLAGS="$TMA" SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="256" \
  SM_BENCH=0 SM_TEST_SHARDS=14 SM_TEST_TIMEOUT=150 SM_SAN_TIMEOUT=90 \
  SM_TEST_FILTER='Cases/Flash3Forward.*_d256_*:*Auto*' \
  SM_SAN_FILTER='*d256tma_b2_sq193_sk700*bf16*:*d256tma_b2_sq700_sk200*bf16*' \
  OUT=$OUT/t timeout 380 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
trc=$?
tail -5 $OUT/tests.txt
grep -h "Failure\|FAILED  \]" $OUT/t/test*.log 2>/dev/null | head -12
grep -h "ERROR SUMMARY\|hazard" $OUT/t/sanitizer_*.log 2>/dev/null | head -8
{ cat $OUT/t/test*.log; cat $OUT/t/sanitizer_*.log; } > $OUT/testlogs.txt 2>/dev/null
echo "tests: rc=$trc passed-lines=$(grep -c 'OK \]' $OUT/testlogs.txt) at $(( $(date +%s) - t0 )) s"
rm -rf $OUT/t
wait $p1; wait $p2; wait $p3; wait $p4
cat $OUT/b1.txt $OUT/b2.txt $OUT/b3.txt $OUT/b4.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
tail -4 $OUT/builds.txt
echo "builds done: $(( $(date +%s) - t0 )) s"
if [ "$trc" != 0 ]; then echo "A/B and trace skipped: suites rc=$trc"; ls $OUT; exit 0; fi
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so --d 256 \
  --s 1024,2048,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --shim tma=build_ab_tma/libflash3_shim.so --variant def2= \
  --json $OUT/ab.json > $OUT/ab.txt 2>&1
tail -3 $OUT/ab.txt
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -24
echo "ab done: $(( $(date +%s) - t0 )) s"
for v in trace trace_tma; do
  timeout 60 python3 bench/gpu/flash3_tile_trace.py --lib build_$v/libflash3_shim.so --d 256 \
    --s 1024,4096 --as-timed > $OUT/$v.txt 2>&1
  timeout 60 python3 bench/gpu/flash3_tile_trace.py --lib build_$v/libflash3_shim.so --d 256 \
    --s 1024 --causal --as-timed >> $OUT/$v.txt 2>&1
  echo "$v rc $? at $(( $(date +%s) - t0 )) s"; grep "D=256" $OUT/$v.txt | cut -c1-400
done
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
