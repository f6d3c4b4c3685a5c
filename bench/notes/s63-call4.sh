# Session 63 call 4 (cold, ~300 s of budget left; wip/w3 with probe 2): the D 256 tile trace
# (session 58's form, --as-timed) of the default build and of probe 2 (O's stores never run, the
# code the same), nc 1k / 4k: which of Q wait / mainloop / epilogue / gap the stores cost.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_TRACE=1 F3_DIMS="256" B=build_trace bash bench/gpu/flash3_shim_only.sh > $OUT/build_trace.txt 2>&1 &
p1=$!
F3_TRACE=1 F3_DIMS="256" F3_DEFS="-DATTNKIT_FLASH3_FWD_D256_EPI_PROBE=2" B=build_trace_p2 \
  bash bench/gpu/flash3_shim_only.sh > $OUT/build_trace_p2.txt 2>&1 &
p2=$!
wait $p1; wait $p2
tail -1 $OUT/build_trace.txt $OUT/build_trace_p2.txt
echo "builds: $(( $(date +%s) - t0 )) s"
for v in trace trace_p2; do
  timeout 60 python3 bench/gpu/flash3_tile_trace.py --lib build_$v/libflash3_shim.so --d 256 \
    --s 1024,4096 --as-timed > $OUT/$v.txt 2>&1
  echo "$v rc $? at $(( $(date +%s) - t0 )) s"; tail -2 $OUT/$v.txt
done
echo "total: $(( $(date +%s) - t0 )) s"
