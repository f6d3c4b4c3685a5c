# Session 65 call 1 (cold; sr = main + f3stagedrel-65.patch): the D 128 staged-Q-buffer release
# (ATTNKIT_FLASH3_FWD_STAGED_RELEASE). Four D 128 A/B shims (def = 0, r1, r2, r3) and the value-2
# suites tree (build only) build in the background while the value-3 suites build and run
# (value 3's code holds value 1's own staging and the peeled turn 2; + memcheck / racecheck on two
# tmaepi_1blk cases); then the value-2 suites (the after_issue hook); then, if both passed
# (scoremod_run.sh's exit status, which counts failed / timed-out shards since this session) and
# time is left, the A/B (nc + causal, 1k / 4k, bitwise, def2 = the default shim timed twice).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
SR="-DATTNKIT_FLASH3_FWD_STAGED_RELEASE"
SAN='*tmaepi_1blk_b1_sq900_sk100_h8x2_d128*:*tmaepi_1blk_b2_sq700_sk200_h8x2_d128*'
F128='Cases/Flash3Forward.*_d128_*:*Auto*'
pids=()
F3_DIMS="128" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b0.txt 2>&1 &
pids+=($!)
for v in 1 2 3; do
  F3_DIMS="128" F3_DEFS="$SR=$v" B=build_ab_r$v bash bench/gpu/flash3_shim_only.sh \
    > $OUT/b$v.txt 2>&1 &
  pids+=($!)
done
SM_CUDA_FLAGS="$SR=2" SM_BUILD=build_sm2 SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="128" \
  SM_BENCH=0 SM_TESTS=0 SM_SANITIZE=0 OUT=$OUT/t2 bash bench/gpu/scoremod_run.sh > $OUT/b4.txt 2>&1 &
pids+=($!)
SM_CUDA_FLAGS="$SR=3" SM_BUILD=build_sm3 SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="128" \
  SM_BENCH=0 SM_TEST_SHARDS=14 SM_TEST_TIMEOUT=150 SM_SAN_TIMEOUT=90 SM_TEST_FILTER="$F128" \
  SM_SAN_FILTER="$SAN" OUT=$OUT/t3 timeout 420 bash bench/gpu/scoremod_run.sh > $OUT/tests3.txt 2>&1
rc3=$?
cat $OUT/tests3.txt
echo "v3 suites: rc=$rc3 at $(( $(date +%s) - t0 )) s"
for p in "${pids[@]}"; do wait "$p"; done
cat $OUT/b?.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
grep -E "build:|error" $OUT/builds.txt | head -8
echo "builds done: $(( $(date +%s) - t0 )) s"
SM_CUDA_FLAGS="$SR=2" SM_BUILD=build_sm2 SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="128" \
  SM_BENCH=0 SM_TEST_SHARDS=14 SM_TEST_TIMEOUT=150 SM_SAN_TIMEOUT=90 SM_TEST_FILTER="$F128" \
  SM_SAN_FILTER="$SAN" OUT=$OUT/t2 timeout 300 bash bench/gpu/scoremod_run.sh > $OUT/tests2.txt 2>&1
rc2=$?
cat $OUT/tests2.txt
echo "v2 suites: rc=$rc2 at $(( $(date +%s) - t0 )) s"
{ for t in t3 t2; do cat $OUT/$t/test.log $OUT/$t/sanitizer_*.log; done; } > $OUT/testlogs.txt 2>/dev/null
rm -rf $OUT/t2 $OUT/t3
el=$(( $(date +%s) - t0 ))
if [ "$rc3" != 0 ] || [ "$rc2" != 0 ]; then echo "A/B skipped: suites rc $rc3 / $rc2"; exit 0; fi
if [ $el -gt 470 ]; then echo "A/B left for call 1b: $el s"; exit 0; fi
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so --d 128 --s 1024,4096 \
  --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --shim r1=build_ab_r1/libflash3_shim.so --shim r2=build_ab_r2/libflash3_shim.so \
  --shim r3=build_ab_r3/libflash3_shim.so --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
grep -i "bits differing\|slot" $OUT/ab.txt | head -6
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -24
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
