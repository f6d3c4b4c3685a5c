# Session 71 call 4 (cold, ~200 s; the last ~300 s of the budget): D 256 non-causal 8k / 16k with
# the multicast twin + split tail (mctail:1) on today's kernels: session 59 read +0.2 / +0.2 % at
# 16k; D 128's gain on the same mechanism grew from +1.1 (s57) to +1.5 % (s71). Measurement only
# (nothing lands from it this session: no budget left for its tests). One D 256 shim.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="256" B=build_p3 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1
grep -iE " error" $OUT/shim.log | head -5
echo "build $(( $(date +%s) - t0 )) s"
timeout 90 python3 bench/gpu/flash3_knob_ab.py --lib build_p3/libflash3_shim.so --d 256 \
  --s 16384,8192 --causal 0 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --variant mct=mctail:1 --variant def2= --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab.json def 2>&1 | tail -8
echo "total: $(( $(date +%s) - t0 )) s"
