# Session 70 call 5 (cold, ~190 s): Tuning::round_table's auto away from the benchmark's S, where
# users' shapes are: D 64 non-causal S 1280 / 1400 / 2560 / 3000 (the auto's model +5.0 / +3.2 /
# +5.0 / +1.7 %) and 1088 (model +0.8 %: the auto off; forced with rtab:1). Each against the
# rotated rounds (rtab:0), 1-s blocks, 3 rounds, B = 16384 / S, 32 heads.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="64" B=build_p64 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1
grep -iE " error" $OUT/shim.log | head -5; grep -qiE " error" $OUT/shim.log || rm -f $OUT/shim.log
echo "build $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/gpu/flash3_knob_ab.py --lib build_p64/libflash3_shim.so --d 64 \
  --s 1280,1400,2560,3000,1088 --causal 0 --rounds 3 --blocks 1.0 --variant def= \
  --variant rot=rtab:0 --variant on=rtab:1 --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -16
echo "total: $(( $(date +%s) - t0 )) s"
