# Session 68 call 1 (ran: cold, 254 s; bench/notes/session68.md): the forward's energy budget by
# removal, D 64 nc and causal at 1k / 16k. (Call 2 ran the D 128 form, with the suspend-hint A/B
# beside it, as bench/notes/s68-call2.sh; this script's `EP_D=128 EP_S=1024,4096,16384
# EP_CAUSAL=0` does the D 128 part alone.) Applies bench/patches/f3-energy-probe-s68.patch
# (session 67's f3-energy-probe-s67.patch, which these calls ran, plus bit 16; the s67 file is in
# git history at e85fbb3)
# (ATTNKIT_FLASH3_FWD_ENERGY_PROBE, default 0: slot 14 SASS-identical to main; compile-checked at
# 1 / 2 / 4 / 8 and the D 64 / 128 forward translation units at 15; output wrong by design when
# set) and builds five shims of head dim EP_D: ep0 = main's code, ep1 = no MUFU exp2 (one FFMA),
# ep2 = no P V wgmma, ep4 = no Q K^T wgmma, ep8 = no K / V TMA load. Every row runs at the 700 W
# cap (session 67 call 5: 690-694 W at D 64 causal 1k), so a probe's saved energy per call is
# (P t)_def - (P t)_probe: read the GFLOP/J column (the same credited FLOPs for every variant),
# and check that the probe still runs at the cap (if not, its time says less than its joules).
set -u
export PATH=$PATH:/usr/local/cuda/bin
D=${EP_D:-64} S=${EP_S:-1024,16384} CAUSAL=${EP_CAUSAL:-0,1}
t0=$(date +%s)
# (every call copies the tree afresh: apply unless it is already applied)
if git apply --check bench/patches/f3-energy-probe-s68.patch 2>/dev/null; then
  git apply bench/patches/f3-energy-probe-s68.patch
fi
for v in 0 1 2 4 8; do
  F3_DIMS="$D" F3_DEFS="-DATTNKIT_FLASH3_FWD_ENERGY_PROBE=$v" B=build_ep$v \
    bash bench/gpu/flash3_shim_only.sh > $OUT/b$v.txt 2>&1 &
done
wait
cat $OUT/b?.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds: $el s"
timeout $(( 585 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ep0/libflash3_shim.so \
  --d "$D" --s "$S" --causal "$CAUSAL" --rounds 3 --blocks 1.0 --max-err 1e9 --variant def= \
  --shim noexp=build_ep1/libflash3_shim.so --shim nopv=build_ep2/libflash3_shim.so \
  --shim noqk=build_ep4/libflash3_shim.so --shim nokv=build_ep8/libflash3_shim.so \
  --variant def2= --json $OUT/ep.json > $OUT/ep.txt 2>&1
grep -h "W, cap" $OUT/ep.txt | grep " r[12] " | cut -c1-175
python3 bench/gpu/flash3_ab_ratios.py $OUT/ep.json def 2>&1 | tail -14
echo "total: $(( $(date +%s) - t0 )) s"
