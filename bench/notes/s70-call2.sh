# Session 70 call 2 (~150 s cold): where the split last tile's time goes. Call 1 (s70-call1.sh)
# (Tree: git apply bench/patches/f3-split-last-s69.patch, -v2-s69.patch, then f3-split-last-trace-s70.patch.)
# measured v2 no better than v1 (split / def -1.4 / -1.5 % at 1k; probe X 1.08 / 0.85 against
# the lone tile's 0.86 / 0.64), the model's 0.36 unexplained after two fixes. Tree: main +
# f3-split-last-s69.patch + f3-split-last-v2-s69.patch + trace stamps in split_tile (words 4-10)
# and produce_split_tile (word 11 of slots 0 / 1 / 2), trace builds only.
# flash3_tile_trace.py --split-trace: per S, split:0 and split:1, the periods of T (a head's last
# tile), the tile before and after it, the others; T's per-warpgroup timeline and the producer's.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_TRACE=1 F3_DIMS="64" B=build_trace bash bench/gpu/flash3_shim_only.sh > $OUT/bt.txt 2>&1
grep -iE " error" $OUT/bt.txt | head -5
echo "build $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/gpu/flash3_tile_trace.py --lib build_trace/libflash3_shim.so \
  --split-trace --s 1024,4096 > $OUT/trace.txt 2>&1
echo "trace rc=$?"; cat $OUT/trace.txt | cut -c1-250
echo "total: $(( $(date +%s) - t0 )) s"
