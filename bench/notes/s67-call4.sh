# Session 67 call 4 (cold ~340 s / warm ~300 s): two turn-0 levers from call 3's trace, same process,
# bitwise. Shims: def (D 64 + 128), t3 = ATTNKIT_FLASH3_FWD_T0_TRIM=3 (the pending V wait and the
# pending tile's row-sum shuffles before the ping-pong turn; D 64 + 128), b1 =
# ATTNKIT_FLASH3_FWD_T0_MASK_BIAS=1 (turn 0's mask as S's starting value, written before the
# waits; D 64 2-warpgroup kernels only, so D 64 only).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="64 128" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b0.txt 2>&1 &
F3_DIMS="64" F3_DEFS="-DATTNKIT_FLASH3_FWD_T0_MASK_BIAS=1" B=build_ab_b1 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b2.txt 2>&1 &
F3_DIMS="64 128" F3_DEFS="-DATTNKIT_FLASH3_FWD_T0_TRIM=3" B=build_ab_t3 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b1.txt 2>&1
wait
cat $OUT/b0.txt $OUT/b1.txt $OUT/b2.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds: $el s"
timeout $(( 585 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so \
  --d 64 --s 1024 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --shim t3=build_ab_t3/libflash3_shim.so --shim b1=build_ab_b1/libflash3_shim.so --variant def2= \
  --json $OUT/ab64.json > $OUT/ab64.txt 2>&1
timeout $(( 585 - $(date +%s) + t0 )) python3 bench/gpu/flash3_knob_ab.py \
  --lib build_ab_def/libflash3_shim.so --d 64,128 --s 4096 --causal 1 --rounds 3 --blocks 1.0 \
  --bitwise --variant def= --shim t3=build_ab_t3/libflash3_shim.so --variant def2= \
  --json $OUT/ab4k.json > $OUT/ab4k.txt 2>&1
timeout $(( 585 - $(date +%s) + t0 )) python3 bench/gpu/flash3_knob_ab.py \
  --lib build_ab_def/libflash3_shim.so --d 128 --s 1024 --causal 0,1 --rounds 3 --blocks 1.0 \
  --bitwise --variant def= --shim t3=build_ab_t3/libflash3_shim.so --variant def2= \
  --json $OUT/ab128.json > $OUT/ab128.txt 2>&1
grep -hi "bits differing\|error\|Traceback" $OUT/ab64.txt $OUT/ab4k.txt $OUT/ab128.txt | cut -c1-170
for f in ab64 ab4k ab128; do python3 bench/gpu/flash3_ab_ratios.py $OUT/$f.json def 2>&1 | tail -13; done
echo "total: $(( $(date +%s) - t0 )) s"
