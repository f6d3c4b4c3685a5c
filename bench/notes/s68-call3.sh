# Session 68 call 3 (~400 s cold): is call 1 / 2's nokv saving (7-11 % of the energy) the K / V
# transfers, or the operands the tensor cores then read (stale shared memory)? Probe bit 16 of
# bench/patches/f3-energy-probe-s68.patch ("kvonce"): K / V loaded only into each stage's first use
# in the CTA, so shared memory holds real K / V (frozen) and every later transfer is skipped.
# Three shims of D 64 + 128: ep0 (main's code), ep8 (nokv), ep16 (kvonce). Rows: D 64 nc / causal
# 1k, nc 16k; D 128 nc 1k (plus mc = cluster:3, the multicast twin forced at 1k keys: its energy,
# session 51 read only its time, -0.3 / -0.4 %) and nc 4k (the twin is the default there).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
if git apply --check bench/patches/f3-energy-probe-s68.patch 2>/dev/null; then
  git apply bench/patches/f3-energy-probe-s68.patch
fi
for v in 0 8 16; do
  F3_DIMS="64 128" F3_DEFS="-DATTNKIT_FLASH3_FWD_ENERGY_PROBE=$v" B=build_ep$v \
    bash bench/gpu/flash3_shim_only.sh > $OUT/b$v.txt 2>&1 &
done
wait
cat $OUT/b*.txt > $OUT/builds.txt; rm -f $OUT/b[0-9]*.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds: $el s"
SH="--shim nokv=build_ep8/libflash3_shim.so --shim kvonce=build_ep16/libflash3_shim.so"
timeout $(( 420 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ep0/libflash3_shim.so \
  --d 64 --s 1024 --causal 0,1 --rounds 3 --blocks 1.0 --max-err 1e9 --variant def= $SH \
  --variant def2= --json $OUT/kv64.json > $OUT/kv64.txt 2>&1
el=$(( $(date +%s) - t0 )); echo "kv64 done: $el s"
timeout $(( 588 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ep0/libflash3_shim.so \
  --d 128 --s 1024,4096 --causal 0 --rounds 3 --blocks 1.0 --max-err 1e9 --variant def= $SH \
  --variant mc=cluster:3 --variant def2= --json $OUT/kv128.json > $OUT/kv128.txt 2>&1
for f in kv64 kv128; do python3 bench/gpu/flash3_ab_ratios.py $OUT/$f.json def 2>&1 | tail -7; done
grep -h "W, cap" $OUT/kv64.txt $OUT/kv128.txt | grep " r[12] " | cut -c1-60,100-175
echo "total: $(( $(date +%s) - t0 )) s"
