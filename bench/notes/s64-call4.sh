# Session 64 call 4 (cold, ~300 s of budget left; wip/tma): does D 64 gain from its existing TMA
# epilogue (Tuning::tma_epilogue = 1: slot 15, forced only since session 8) now? Call 1's D 256
# causal gain came from the mainloop and Q wait, not the epilogue (a guess: the other ping-pong
# warpgroup's STG traffic), and call 2's probe says O's stores cost D 64 +3.3..+4.4 % at 1k.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="64" B=build_ab_d64 bash bench/gpu/flash3_shim_only.sh > $OUT/build.txt 2>&1
tail -1 $OUT/build.txt; echo "build: $(( $(date +%s) - t0 )) s"
timeout 150 python3 bench/gpu/flash3_knob_ab.py --lib build_ab_d64/libflash3_shim.so --d 64 \
  --s 1024,4096 --causal 0,1 --rounds 3 --blocks 1.0 --bitwise --variant def= \
  --variant tma=tmaepi:1 --variant def2= --json $OUT/ab64.json > $OUT/ab64.txt 2>&1
grep "bits differing" $OUT/ab64.txt
python3 bench/gpu/flash3_ab_ratios.py $OUT/ab64.json def 2>&1 | tail -13
grep " r1 " $OUT/ab64.txt | grep -o "^D=.* r1 \|tma *[0-9.]* ([^)]*)" | paste - - | head -4
echo "total: $(( $(date +%s) - t0 )) s"
