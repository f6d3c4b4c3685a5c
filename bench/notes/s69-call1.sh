# Session 69 call 1 (cold, ~200 s): the cost of a head's partial last tile on today's D 64
# non-causal kernels, as the ceiling of two untried / unpaid levers for D 64 nc 1k (1.055x cuDNN,
# session 66's table): a split-K last tile (session 13 built one on the H100 and it gained nothing
# because its blocks ran back to back on a 2-stage ring) and mixed tile heights (1024 rows as
# 4 x 192 + 2 x 128 instead of 5 x 192 + 1 x 64). One D 64 shim of main, then
# `flash3_tail_probe.py --partial`: S_q = 960 / 1024 / 1088 / 1152 at S_k 1024 and 4032 / 4096 /
# 4160 / 4224 at S_k 4096 (BENCHMARKS.md's B and H), auto / 3 WG forced / cuDNN interleaved.
# Predictions and the decision rule: bench/notes/session69.md.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="64" B=build_p64 bash bench/gpu/flash3_shim_only.sh > $OUT/build.txt 2>&1
grep -iE "error" $OUT/build.txt | head -5
echo "build: $(( $(date +%s) - t0 )) s"
timeout 300 python3 bench/gpu/flash3_tail_probe.py --lib build_p64/libflash3_shim.so --partial \
  --rounds 3 --reps 60 > $OUT/partial.txt 2>&1
echo "rc=$?"; cat $OUT/partial.txt | cut -c1-200
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit --format=csv >> $OUT/partial.txt
echo "total: $(( $(date +%s) - t0 )) s"
