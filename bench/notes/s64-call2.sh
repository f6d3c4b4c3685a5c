# Session 64 call 2 (cold; wip/tma with ATTNKIT_FLASH3_FWD_D256_TMA_EPI defaulting to 1 = the
# causal skip-turn kernels 109 / 119 only): the D 256 suites on that default (+ memcheck /
# racecheck on two causal d256tma cases) while three shims build (D 256 at 0 = main's STG code,
# D 256 at the new default, and the O-store probe's D 64 / 128 shim from po_src/, an export of
# main + f3oprobe-64.patch); then, only if the suites passed, the D 256 A/B (new against 0,
# bitwise) and the O-store probe A/B at D 64 / 128.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="256" F3_DEFS="-DATTNKIT_FLASH3_FWD_D256_TMA_EPI=0" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b1.txt 2>&1 &
p1=$!
F3_DIMS="256" B=build_ab_new bash bench/gpu/flash3_shim_only.sh > $OUT/b2.txt 2>&1 &
p2=$!
SRC=po_src F3_DIMS="64 128" F3_DEFS="-DATTNKIT_FLASH3_FWD_O_PROBE=1" B=build_ab_po \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b3.txt 2>&1 &
p3=$!
SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="256" \
  SM_BENCH=0 SM_TEST_SHARDS=14 SM_TEST_TIMEOUT=150 SM_SAN_TIMEOUT=90 \
  SM_TEST_FILTER='Cases/Flash3Forward.*_d256_*:*Auto*' \
  SM_SAN_FILTER='*d256tma_b2_sq700_sk200*bf16*:*d256tma_b1_sq300_sk500*bf16*' \
  OUT=$OUT/t timeout 330 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
trc=$?
tail -5 $OUT/tests.txt
grep -h "Failure\|FAILED  \]" $OUT/t/test*.log 2>/dev/null | head -12
grep -h -B2 -A8 "Failure" $OUT/t/test*.log 2>/dev/null | head -40
{ cat $OUT/t/test*.log; cat $OUT/t/sanitizer_*.log; } > $OUT/testlogs.txt 2>/dev/null
echo "tests: rc=$trc at $(( $(date +%s) - t0 )) s"
rm -rf $OUT/t
wait $p1; wait $p2; wait $p3
cat $OUT/b1.txt $OUT/b2.txt $OUT/b3.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
tail -4 $OUT/builds.txt
echo "builds done: $(( $(date +%s) - t0 )) s"
if [ "$trc" = 0 ]; then
  python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so --d 256 \
    --s 1024,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
    --shim new=build_ab_new/libflash3_shim.so --variant def2= \
    --json $OUT/ab256.json > $OUT/ab256.txt 2>&1
  tail -2 $OUT/ab256.txt
  python3 bench/gpu/flash3_ab_ratios.py $OUT/ab256.json def 2>&1 | tail -19
else
  echo "D 256 A/B skipped: suites rc=$trc"
fi
echo "ab256 done: $(( $(date +%s) - t0 )) s"
python3 po_src/bench/gpu/flash3_knob_ab.py --lib build_ab_po/libflash3_shim.so --d 64,128 \
  --s 1024,4096 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise \
  --variant def= --variant po=probeo:1 --variant def2= --json $OUT/ab_po.json > $OUT/ab_po.txt 2>&1
grep -i "bits differing" $OUT/ab_po.txt | head -8
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab_po.json def 2>&1 | tail -25
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
