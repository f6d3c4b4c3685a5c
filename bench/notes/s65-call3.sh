# Session 65 call 3 (cold): Tuning::smem_pad (unused dynamic shared memory added to a launch).
# The D 256 forward suites with the new smem_pad case (+ memcheck on it) while main's D 256 shim
# builds; then, if the suites passed, main's non-causal kernels with their shared memory padded to
# the staged layout's size (slot 69 at 1k: +32 KB; slot 79 at 4k / 16k: +16 KB) against the
# default and a copy: does slot 79's -2..-3.6 % in the staged build (call 2b, v2stg) come from
# the shared-memory size alone?
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="256" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/builds.txt 2>&1 &
p0=$!
SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="256" SM_BENCH=0 SM_TEST_SHARDS=14 \
  SM_TEST_TIMEOUT=150 SM_SAN_TIMEOUT=90 SM_TEST_FILTER='Cases/Flash3Forward.*_d256_*:*Auto*' \
  SM_SAN_FILTER='*smem_pad_b2_sq1024_sk2500*:*d256tma_stg_b2_sq1024_sk1024*' \
  OUT=$OUT/t timeout 330 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
trc=$?
cat $OUT/tests.txt
grep -h "smem_pad\|d256tma_stg\|FAILED  \]" $OUT/t/test.log | head -8
{ cat $OUT/t/test.log $OUT/t/sanitizer_*.log; } > $OUT/testlogs.txt 2>/dev/null
rm -rf $OUT/t
wait $p0
grep -iE "error" $OUT/builds.txt | head -5
echo "suites rc=$trc, builds done: $(( $(date +%s) - t0 )) s"
if [ "$trc" != 0 ]; then echo "A/B skipped: suites rc=$trc"; exit 0; fi
A="python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so --d 256 --causal 0"
A="$A --rounds 3 --blocks 1.0 --bitwise --variant def="
$A --s 1024 --variant pad32=smempad:32768 --variant def2= --json $OUT/ab1k.json > $OUT/ab1k.txt 2>&1
$A --s 4096,16384 --variant pad16=smempad:16384 --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
grep -i "bits differing\|rror" $OUT/ab1k.txt $OUT/ab.txt | cut -c1-200 | head -6
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab1k.json def 2>&1 | tail -5
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -8
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
