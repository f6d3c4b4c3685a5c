# Session 68 call 2 (prepared in session 67, never run; ~300 s, after call 1): the D 128 forward's
# energy budget by removal at its rows below or near 1.10 (nc 1k / 4k / 16k), as call 1 does at
# D 64: bench/patches/f3-energy-probe-s67.patch (ATTNKIT_FLASH3_FWD_ENERGY_PROBE; default 0: slot
# 14 SASS-identical to main; compile-checked at 1 / 2 / 4 / 8, the D 64 / 128 forward translation
# units at 15; output wrong by design when set), five D 128 shims: ep0 = main's code, ep1 = no
# MUFU exp2 (one FFMA), ep2 = no P V wgmma, ep4 = no Q K^T wgmma, ep8 = no K / V TMA load. Read
# the GFLOP/J column and check that each variant runs at the 700 W cap (session 67 saw 690-694 W
# at D 64; if a probe falls below the cap, its time says less than its joules).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
# (every call copies the tree afresh: apply unless it is already applied)
git apply --check bench/patches/f3-energy-probe-s67.patch 2>/dev/null &&
  git apply bench/patches/f3-energy-probe-s67.patch
for v in 0 1 2 4 8; do
  F3_DIMS="128" F3_DEFS="-DATTNKIT_FLASH3_FWD_ENERGY_PROBE=$v" B=build_ep$v \
    bash bench/gpu/flash3_shim_only.sh > $OUT/b$v.txt 2>&1 &
done
wait
cat $OUT/b?.txt > $OUT/builds.txt; rm -f $OUT/b?.txt
grep -iE "error" $OUT/builds.txt | head -5
el=$(( $(date +%s) - t0 )); echo "builds: $el s"
timeout $(( 585 - el )) python3 bench/gpu/flash3_knob_ab.py --lib build_ep0/libflash3_shim.so \
  --d 128 --s 1024,4096,16384 --causal 0 --rounds 3 --blocks 1.0 --max-err 1e9 --variant def= \
  --shim noexp=build_ep1/libflash3_shim.so --shim nopv=build_ep2/libflash3_shim.so \
  --shim noqk=build_ep4/libflash3_shim.so --shim nokv=build_ep8/libflash3_shim.so \
  --variant def2= --json $OUT/ep.json > $OUT/ep.txt 2>&1
grep -h "W, cap" $OUT/ep.txt | grep " r[12] " | cut -c1-175
python3 bench/gpu/flash3_ab_ratios.py $OUT/ep.json def 2>&1 | tail -11
echo "total: $(( $(date +%s) - t0 )) s"
