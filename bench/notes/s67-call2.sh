# Session 67 call 2 (cold, ~300 s): ATTNKIT_FLASH3_FWD_T0_PV_FIRST = 1 (the overlapped consumer's
# turn 0 issues the previous tile's pending P V before the new Q K^T and runs that tile's
# epilogue while S computes; mainloop.cuh) against the default, D 64 and D 128, S 1k / 4k, nc and
# causal, same process, bitwise. Two D 64 + D 128 shims build at once.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="64 128" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b0.txt 2>&1 &
F3_DIMS="64 128" F3_DEFS="-DATTNKIT_FLASH3_FWD_T0_PV_FIRST=1" B=build_ab_pv1 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b1.txt 2>&1
wait
cat $OUT/b0.txt $OUT/b1.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds: $el s"
timeout $(( 580 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so \
  --d 64,128 --s 1024,4096 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --shim pv1=build_ab_pv1/libflash3_shim.so --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
grep -i "bits differing\|error\|Traceback" $OUT/ab.txt | cut -c1-160 | head -12
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -30
echo "total: $(( $(date +%s) - t0 )) s"
