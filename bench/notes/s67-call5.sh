set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="64" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > $OUT/b0.txt 2>&1 &
F3_DIMS="64" F3_DEFS="-DATTNKIT_FLASH3_FWD_PROBE_NO_T0_MASK=1" B=build_ab_nm \
  bash bench/gpu/flash3_shim_only.sh > $OUT/b1.txt 2>&1
wait
grep -ihE "error" $OUT/b0.txt $OUT/b1.txt | head -5
echo "builds: $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/gpu/flash3_knob_ab.py --lib build_ab_def/libflash3_shim.so \
  --d 64 --s 1024 --causal 1 --rounds 3 --blocks 1.0 --max-err 100 --variant def= \
  --shim nomask=build_ab_nm/libflash3_shim.so --variant def2= --json $OUT/nm.json > $OUT/nm.txt 2>&1
tail -5 $OUT/nm.txt | cut -c1-200
python3 bench/gpu/flash3_ab_ratios.py $OUT/nm.json def 2>&1 | tail -5
echo "total: $(( $(date +%s) - t0 )) s"
