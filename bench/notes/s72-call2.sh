# Session 72 call 2 (prepared in session 71; cold, ~250 s): where the split tail's fixed cost goes
# at D 128 nc 4k (session 71: the multicast twin + tail nets -0.4 / -0.5 % there, +1.5 % at 16k;
# a rough fit says ~12 us fixed, ~60 % of the last round's idle recovered). One D 128 shim, then
# flash3_knob_ab.py with the tail probe (Tuning::tail_probe: 1 = launch 1 alone, 2 = launch 2
# alone, 3 = launch 2 without programmatic dependent launch) at 4k / 16k. Read the times, not the
# TFLOP/s (the probes do part of the work): ms = the row's FLOPs / its TFLOP/s.
#   F = t(mct) - t(l1) - (t(l2) - launch ramp); PDL's share = t(nopdl) - t(mct).
# Decide: if t(mct) - t(l1) exceeds the tail's work (l2's kernel time at steady clock) by >= 1 %
# of the 4k call, the ramp / overlap is the cost and an in-kernel split is worth a design note;
# else the merge and the pieces' fills are, and no launch change helps.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="128" B=build_p2 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1
grep -iE " error" $OUT/shim.log | head -5
echo "build $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/gpu/flash3_knob_ab.py --lib build_p2/libflash3_shim.so --d 128 \
  --s 4096,16384 --causal 0 --rounds 3 --blocks 1.0 --variant def=mctail:0 --variant mct=mctail:1 \
  --variant l1=mctail:1,tprobe:1 --variant l2=mctail:1,tprobe:2 --variant nopdl=mctail:1,tprobe:3 \
  --json $OUT/ab.json > $OUT/ab.txt 2>&1
echo "ab rc=$?"
grep -vE "TFLOP/s at" $OUT/ab.txt | grep -E " r[12] " | head -8
echo "total: $(( $(date +%s) - t0 )) s"
