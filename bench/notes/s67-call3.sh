# Session 67 call 3 (~130 s warm / ~170 s cold): where a D 64 / 128 tile's fixed cost goes. One
# trace shim (D 64 + 128, F3_TRACE=1: kernel.cuh's tile stamps + Consumer::stamp's turn-0 words
# 4-10), then flash3_tile_trace.py --phases at D 64 causal 1k (slot 14, 2 WGs: the fixed 2,974
# cycles a tile of call 1), D 64 nc 1k, D 128 causal and nc 1k (the trace build's clock reads
# move ptxas's waits: read the parts as a split of the period, not as exact costs).
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_TRACE=1 F3_DIMS="64 128" B=build_trace2 bash bench/gpu/flash3_shim_only.sh > $OUT/bt.txt 2>&1
grep -iE "error" $OUT/bt.txt | head -5
echo "build: $(( $(date +%s) - t0 )) s"
for d in 64 128; do
  timeout 60 python3 bench/gpu/flash3_tile_trace.py --lib build_trace2/libflash3_shim.so --d $d \
    --s 1024 --phases --causal
  timeout 60 python3 bench/gpu/flash3_tile_trace.py --lib build_trace2/libflash3_shim.so --d $d \
    --s 1024 --phases
done > $OUT/phases.txt 2>&1
cat $OUT/phases.txt
echo "total: $(( $(date +%s) - t0 )) s"
