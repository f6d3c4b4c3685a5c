# Session 62 call 2 (cold; wip/split with the split taken only with the ping-pong on): the two
# A/B shims (def, split) build in the background while the suites' tree builds and the D 64
# suites + racecheck on split62 (ping-pong on) and one pp_off case run; then the A/B
# (flash3_defs_ab.sh's loop, its builds done here) and the split build's D 64 table if time is left.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
bash src/backends/cudnn/get_frontend.sh > /dev/null 2>&1 || true
F3_DIMS="64" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/build_def.txt 2>&1 &
p1=$!
F3_DIMS="64" F3_DEFS="-DATTNKIT_FLASH3_FWD_D64_PARTIAL_SPLIT=1" B=build_ab_split \
  bash bench/gpu/flash3_shim_only.sh > $OUT/build_split.txt 2>&1 &
p2=$!
S="*split62_b2_sq1000_sk1000*bf16*:*split62_b2_sq193*bf16*:*split62_b2_sq400*bf16*"
S="$S:*split62_b1_sq1000_sk1000_h8x2*bf16_tl*:*split62_pp_off_b2_sq193*bf16*"
SM_CUDA_FLAGS="-DATTNKIT_FLASH3_FWD_D64_PARTIAL_SPLIT=1" SM_BACKENDS="math;flash3;cudnn;cuda_math" \
  SM_DIMS="64" SM_BENCH=0 SM_TEST_SHARDS=14 SM_TEST_TIMEOUT=120 SM_SAN_TIMEOUT=90 \
  SM_TEST_FILTER='Cases/Flash3Forward.*_d64_*:*Auto*:*Lpt*' SM_SAN_FILTER="$S" \
  OUT=$OUT/t timeout 330 bash bench/gpu/scoremod_run.sh > $OUT/tests.txt 2>&1
tail -5 $OUT/tests.txt
grep -h "Failure\|FAILED  \]" $OUT/t/test*.log 2>/dev/null | head -12
grep -h "OK \]\|RUN " $OUT/t/sanitizer_racecheck*.log 2>/dev/null | head -12
cat $OUT/t/sanitizer_*.log > $OUT/sanitizers.log 2>/dev/null; rm -rf $OUT/t
echo "tests done: $(( $(date +%s) - t0 )) s"
wait $p1; wait $p2
cat $OUT/build_def.txt $OUT/build_split.txt | tail -4
echo "builds done: $(( $(date +%s) - t0 )) s"
python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so --d 64 \
  --s 1024,2048,4096,16384 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise \
  --variant def= --shim split=build_ab_split/libflash3_shim.so --variant def2= \
  --variant w55=lptw:55 --shim splitw55=build_ab_split/libflash3_shim.so@lptw:55 \
  --json $OUT/ab.json > $OUT/ab.txt 2>&1
tail -3 $OUT/ab.txt
el=$(( $(date +%s) - t0 ))
if [ $el -lt 450 ]; then
  for r in 1 2; do
    timeout 50 python3 bench/peers.py --lib build_sm/libattnkit_c.so --backends flash3,cudnn --peers '' --d 64 \
      --shapes 1k,4k,16k --causal both --runs 30 --rounds 3 --preheat 0.5 --pause 0 --clocks --passes fwd \
      --json $OUT/fwd$r.json > $OUT/fwd$r.txt 2>&1
    grep -E "^fwd " $OUT/fwd$r.txt | head -8
  done
  cat $OUT/fwd1.txt $OUT/fwd2.txt > $OUT/fwd.txt 2>/dev/null; rm -f $OUT/fwd1.txt $OUT/fwd2.txt
fi
cat $OUT/build_def.txt $OUT/build_split.txt > $OUT/builds.txt; rm -f $OUT/build_def.txt $OUT/build_split.txt
echo "total: $(( $(date +%s) - t0 )) s"; ls $OUT
