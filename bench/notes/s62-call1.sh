# Session 62 call 1 (cold; wip/split = main + f3d64split62): D 64 suites with
# ATTNKIT_FLASH3_FWD_D64_PARTIAL_SPLIT=1 first (a protocol mistake hangs: under timeouts), then
# only if they pass the build-switch A/B (def, split, def2 control, w55 / splitw55 table weight),
# then the D 64 table with the split build if time is left.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
bash src/backends/cudnn/get_frontend.sh > /dev/null 2>&1 || true
SM_CUDA_FLAGS="-DATTNKIT_FLASH3_FWD_D64_PARTIAL_SPLIT=1" SM_BACKENDS="math;flash3;cudnn;cuda_math" \
  SM_DIMS="64" SM_BENCH=0 SM_TEST_SHARDS=14 SM_TEST_TIMEOUT=120 SM_SAN_TIMEOUT=80 \
  SM_TEST_FILTER='Cases/Flash3Forward.*_d64_*:*Auto*:*Lpt*' SM_SAN_FILTER='*split62*pp_off*' \
  OUT=$OUT/t timeout 330 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
tail -6 $OUT/tests.txt
grep -h "Failure\|FAILED  \]" $OUT/t/test*.log 2>/dev/null | head -12
cat $OUT/t/test*.log > $OUT/tests_all.log 2>/dev/null; cat $OUT/t/sanitizer_*.log > $OUT/sanitizers.log 2>/dev/null
rm -rf $OUT/t
echo "tests done: $(( $(date +%s) - t0 )) s"
if grep -q " 0 failed lines" $OUT/tests.txt && grep -q "memcheck rc=0" $OUT/tests.txt \
   && grep -q "racecheck rc=0" $OUT/tests.txt; then
  OUT=$OUT/ab F3_DIMS="64" AB_ARGS="--d 64 --s 1024,2048,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise" \
    AB_EXTRA="--variant def2= --variant w55=lptw:55 --shim splitw55=build_ab_split/libflash3_shim.so@lptw:55" \
    bash bench/gpu/flash3_defs_ab.sh split="-DATTNKIT_FLASH3_FWD_D64_PARTIAL_SPLIT=1" > $OUT/ab_run.txt 2>&1
  mv $OUT/ab/ab.json $OUT/ab.json; mv $OUT/ab/ab.txt $OUT/ab.txt; rm -rf $OUT/ab
  tail -3 $OUT/ab_run.txt
  el=$(( $(date +%s) - t0 ))
  if [ $el -lt 440 ]; then
    for r in 1 2; do
      timeout 50 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' --d 64 \
        --shapes 1k,4k,16k --causal both --runs 30 --rounds 3 --preheat 0.5 --pause 0 --clocks --passes fwd \
        --json $OUT/fwd$r.json > $OUT/fwd$r.txt 2>&1
      grep -E "^fwd " $OUT/fwd$r.txt | head -8
    done
    cat $OUT/fwd1.txt $OUT/fwd2.txt > $OUT/fwd.txt 2>/dev/null; rm -f $OUT/fwd1.txt $OUT/fwd2.txt
  fi
fi
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
