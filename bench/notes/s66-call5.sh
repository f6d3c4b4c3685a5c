# Session 66 call 5 (cold, ~220 s; the last ~268 s of the budget): value 3 restricted to the plain
# kernels. Static (SASS, tools/sass_identical.sh on fwd_d256_bf16.cu): every non-plain D 256
# kernel (score mod, mask, dropout, varlen, narrow, split tail, v5 descriptors, early rescale) and
# every row-sum one is now identical to value 1's, every plain one to the landed value 3's. The
# host: the score-mod launch and the split tail's launch 2 take their shared memory from their own
# traits; slots 8 and the early-rescale ones report no O map. The D 256 tree (math, flash3,
# cuda_math), then the forward cases of those paths + memcheck / racecheck on one score-mod case.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
C='Cases/Flash3Forward.MatchesReference'
F="$C/mod*_d256_*:$C/mask*_d256_*:$C/*tail*_d256_*:$C/legacy_desc*_d256_*:$C/early*_d256_*"
F="$F:$C/d256tma*:Fwd/*_d256_*:Fwd/*_d192_*:*SplitTail*"
SAN="$C/mod_b2_sq700_sk900_h8x2_d256_bf16_tl_g3_cap20_w200_inf"
SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="256" SM_BENCH=0 SM_TEST_SHARDS=16 \
  SM_TEST_TIMEOUT=60 SM_SAN_TIMEOUT=45 SM_TEST_FILTER="$F" SM_SAN_FILTER="$SAN" \
  OUT=$OUT/t timeout 225 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
echo "suites: rc=$? at $(( $(date +%s) - t0 )) s"
cat $OUT/tests.txt
{ cat $OUT/t/test.log $OUT/t/sanitizer_*.log; } > $OUT/testlogs.txt 2>/dev/null
grep -hE "legacy_desc|early" $OUT/t/test.log | grep -E "_d256_" | head -4
rm -rf $OUT/t
