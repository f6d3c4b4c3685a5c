# Session 63 call 1 (cold; wip/w3 = main + f3d128wgs3-63.patch + the D 256 epilogue probe diff):
# three A/B shims (D 128 with WGS3, D 256 default, D 256 probe) build in the background while the
# suites' tree builds and the D 128 suites with WGS3 run (+ racecheck/memcheck on two d128w3
# cases); then the D 128 A/B (only if the suites passed) and the D 256 probe A/B.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
bash src/backends/cudnn/get_frontend.sh > /dev/null 2>&1 || true
F3_DIMS="128" F3_DEFS="-DATTNKIT_FLASH3_FWD_D128_WGS3=1" B=build_ab_w3 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/build_w3.txt 2>&1 &
p1=$!
F3_DIMS="256" B=build_ab_def256 bash bench/gpu/flash3_shim_only.sh > $OUT/build_def256.txt 2>&1 &
p2=$!
F3_DIMS="256" F3_DEFS="-DATTNKIT_FLASH3_FWD_D256_EPI_PROBE=1" B=build_ab_probe \
  bash bench/gpu/flash3_shim_only.sh > $OUT/build_probe.txt 2>&1 &
p3=$!
SM_CUDA_FLAGS="-DATTNKIT_FLASH3_FWD_D128_WGS3=1" SM_BACKENDS="math;flash3;cuda_math" SM_DIMS="128" \
  SM_BENCH=0 SM_TEST_SHARDS=14 SM_TEST_TIMEOUT=150 SM_SAN_TIMEOUT=90 \
  SM_TEST_FILTER='Cases/Flash3Forward.*_d128_*:*Auto*' \
  SM_SAN_FILTER='*d128w3_b2_sq1000_sk1000*bf16*:*d128w3_pp_off*bf16*' \
  OUT=$OUT/t timeout 330 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
trc=$?
tail -5 $OUT/tests.txt
grep -h "Failure\|FAILED  \]" $OUT/t/test*.log 2>/dev/null | head -12
grep -h "OK \]\|RUN \|ERROR SUMMARY\|hazard" $OUT/t/sanitizer_*.log 2>/dev/null | head -12
cat $OUT/t/sanitizer_*.log > $OUT/sanitizers.log 2>/dev/null
nfail=$(cat $OUT/t/test*.log 2>/dev/null | grep -c "FAILED  \]")
npass=$(cat $OUT/t/test*.log 2>/dev/null | grep -c "OK \]")
echo "tests rc=$trc pass=$npass fail=$nfail: $(( $(date +%s) - t0 )) s"
rm -rf $OUT/t
wait $p1; wait $p2; wait $p3
cat $OUT/build_w3.txt $OUT/build_def256.txt $OUT/build_probe.txt > $OUT/builds.txt
rm -f $OUT/build_w3.txt $OUT/build_def256.txt $OUT/build_probe.txt
tail -6 $OUT/builds.txt
echo "builds done: $(( $(date +%s) - t0 )) s"
if [ "$trc" = 0 ] && [ "$nfail" = 0 ] && [ "$npass" -gt 0 ]; then
  python3 bench/gpu/flash3_knob_ab.py --lib build_ab_w3/libflash3_shim.so --d 128 \
    --s 1024,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --variant def= --variant def2= \
    --variant w3=wgs:3 --variant w3pp0=wgs:3,pingpong:0 --json $OUT/ab128.json > $OUT/ab128.txt 2>&1
  tail -3 $OUT/ab128.txt
  python3 bench/gpu/flash3_ab_ratios.py $OUT/ab128.json def 2>&1 | tail -30
else
  echo "w3 A/B skipped: suites did not pass"
fi
echo "ab128 done: $(( $(date +%s) - t0 )) s"
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def256/libflash3_shim.so --d 256 \
  --s 1024,2048,4096,16384 --causal 0 --rounds 3 --blocks 1.0 --variant def= \
  --shim probe=build_ab_probe/libflash3_shim.so --variant def2= \
  --json $OUT/ab256.json > $OUT/ab256.txt 2>&1
tail -3 $OUT/ab256.txt
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab256.json def 2>&1 | tail -20
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
