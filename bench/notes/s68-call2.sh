# Session 68 call 2 (ran: cold, 354 s): (a) the D 128 forward's energy budget by removal (call 1's
# probe, bench/patches/f3-energy-probe-s68.patch; it ran with the s67 form, bits 1-8 the same;
# five D 128 shims: nc 1k / 4k / 16k, the rows at 1.05-1.10) and (b) D 64's producer suspend
# hint, never measured at D 64 (mainloop.cuh kFwdProducerWaitNs: 200 ns at D 128 / 256 since
# session 51, 0 = the plain try_wait loop at D 64): two D 64 shims, the default and
# -DATTNKIT_FLASH3_FWD_WAIT_NS=200 (which also sets D 128 / 256's value to the 200 they have
# already; only D 64 is built), nc / causal at 1k / 4k.
# Seven shims build in parallel; (a) then (b), each A/B under what is left of the 600 s limit.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
if git apply --check bench/patches/f3-energy-probe-s68.patch 2>/dev/null; then
  git apply bench/patches/f3-energy-probe-s68.patch
fi
for v in 0 1 2 4 8; do
  F3_DIMS=128 F3_DEFS="-DATTNKIT_FLASH3_FWD_ENERGY_PROBE=$v" B=build_ep$v \
    bash bench/gpu/flash3_shim_only.sh > $OUT/b$v.txt 2>&1 &
done
F3_DIMS=64 B=build_w0 bash bench/gpu/flash3_shim_only.sh > $OUT/bw0.txt 2>&1 &
F3_DIMS=64 F3_DEFS="-DATTNKIT_FLASH3_FWD_WAIT_NS=200" B=build_w200 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/bw200.txt 2>&1 &
wait
cat $OUT/b*.txt > $OUT/builds.txt; rm -f $OUT/b[0-9]*.txt $OUT/bw*.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds: $el s"
timeout $(( 470 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ep0/libflash3_shim.so \
  --d 128 --s 1024,4096,16384 --causal 0 --rounds 3 --blocks 1.0 --max-err 1e9 --variant def= \
  --shim noexp=build_ep1/libflash3_shim.so --shim nopv=build_ep2/libflash3_shim.so \
  --shim noqk=build_ep4/libflash3_shim.so --shim nokv=build_ep8/libflash3_shim.so \
  --variant def2= --json $OUT/ep128.json > $OUT/ep128.txt 2>&1
el=$(( $(date +%s) - t0 )); echo "ep128 done: $el s"
timeout $(( 588 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_w0/libflash3_shim.so \
  --d 64 --s 1024,4096 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --shim w200=build_w200/libflash3_shim.so --variant def2= --json $OUT/w64.json > $OUT/w64.txt 2>&1
python3 bench/gpu/flash3_ab_ratios.py $OUT/ep128.json def 2>&1 | tail -5
python3 bench/gpu/flash3_ab_ratios.py $OUT/w64.json def 2>&1 | tail -6
echo "total: $(( $(date +%s) - t0 )) s"
