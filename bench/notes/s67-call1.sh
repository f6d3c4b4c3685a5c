# Session 67 call 1 (prepared in session 66; cold, ~300 s): bench/notes/fwd-d64-causal1k-study-s66.md
# P1's proxy and step 0's trace. Two D 64 shims build at once (the timed one and the F3_TRACE=1
# one); then the Q-pad proxy (bottom-aligned 192-row tiles without kernel code: Q padded by 128
# zero rows, bottom-right causal) at causal 1k and 4k against the default, with the lpt table
# forced on the padded call, 3 rounds, one process; then the 2-warpgroup causal tile trace at 1k
# (period per block count, the line F + n x c, the CTAs' spread). Neither script has run on a GPU
# yet (py_compile only): a Python error here costs the call's remainder, not the builds.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
(F3_TRACE=1 F3_DIMS="64" B=build_trace bash bench/gpu/flash3_shim_only.sh > $OUT/bt.txt 2>&1) &
F3_DIMS="64" B=build_shim bash bench/gpu/flash3_shim_only.sh > $OUT/b.txt 2>&1
wait
grep -hiE "error" $OUT/b.txt $OUT/bt.txt | head -5
echo "builds: $(( $(date +%s) - t0 )) s"
for s in 1024 4096; do
  timeout 150 python3 bench/gpu/flash3_qpad_ab.py build_shim/libflash3_shim.so $s 128 3 \
    def= pad= padlpt=lpt:1 def2=
done > $OUT/qpad.txt 2>&1
cat $OUT/qpad.txt
echo "qpad: $(( $(date +%s) - t0 )) s"
timeout 90 python3 bench/gpu/flash3_tile_trace.py --lib build_trace/libflash3_shim.so --d 64 \
  --s 1024,4096 --as-timed --causal > $OUT/trace.txt 2>&1
cat $OUT/trace.txt
echo "total: $(( $(date +%s) - t0 )) s"
