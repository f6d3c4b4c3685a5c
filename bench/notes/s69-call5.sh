# Session 69 call 5 (cold, ~170 s): is call 4's loss in the split tile or in slot 135's whole
# (Ran on branch wip/split69; on main: `git apply bench/patches/f3-split-last-s69.patch` first.)
# tiles? At S_q = S_k = 16384 (B 1, H 32) a head is 85 whole 192-row tiles and one 64-row tile,
# so split:1 runs slot 135 with 1/86 of its tiles split: the split tile moves the call by at most
# ~0.5 %, and anything larger is slot 135's whole-tile code (its steady loop 800 instructions
# against slot 134's 818, the tile boundary +17 issued). Predictions: bench/notes/session69.md.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="64" B=build_p64 bash bench/gpu/flash3_shim_only.sh > $OUT/shim.log 2>&1
grep -iE " error" $OUT/shim.log | head -5
echo "build $(( $(date +%s) - t0 )) s"
timeout 150 python3 bench/gpu/flash3_knob_ab.py --lib build_p64/libflash3_shim.so --d 64 \
  --s 16384 --causal 0 --rounds 3 --blocks 1.0 --variant def= --variant split=split:1 \
  --variant def2= --json $OUT/ab16k.json > $OUT/ab16k.txt 2>&1
echo "ab rc=$?"; grep -h "W, cap" $OUT/ab16k.txt | grep " r[12] " | cut -c1-200
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab16k.json def 2>&1 | tail -4
echo "total: $(( $(date +%s) - t0 )) s"
