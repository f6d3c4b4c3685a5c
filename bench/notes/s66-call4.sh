# Session 66 call 4 (cold, ~250 s; diagnostic only): where slot 79 loses its 2-3 % per turn in the
# value-2 build. Two D 256 shims (def = main, whose slot 79 is value 1's code; v2 =
# -DATTNKIT_FLASH3_FWD_D256_TMA_EPI=2), one ncu run each on the flash3 launch at nc 4k (slot 79):
# speed of light, warp states, scheduler, instruction stats, source counters (per-instruction
# stall sampling) + the tensor-pipe metrics; details summary and stall summary per shim, and both
# source pages for an instruction-by-instruction diff here.
set -u
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
F3_DIMS="256" B=build_ab_def bash bench/gpu/flash3_shim_only.sh > /tmp/b0.txt 2>&1 &
p0=$!
F3_DIMS="256" F3_DEFS="-DATTNKIT_FLASH3_FWD_D256_TMA_EPI=2" B=build_ab_v2 \
  bash bench/gpu/flash3_shim_only.sh > /tmp/b1.txt 2>&1 &
p1=$!
wait $p0; wait $p1
grep -hiE "error" /tmp/b0.txt /tmp/b1.txt | head -5
echo "builds: $(( $(date +%s) - t0 )) s"
M=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__cycles_elapsed.avg,smsp__cycles_active.avg,sm__inst_executed.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,lts__t_sector_hit_rate.pct
for n in def v2; do
  (cd bench/gpu && timeout 150 ncu -k regex:fwd_kernel -c 1 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --section SourceCounters --metrics $M -o /tmp/p_$n -f python3 flash3_prof.py \
    --lib ../../build_ab_$n/libflash3_shim.so --shapes 256:4096:0 > /tmp/ncu_$n.log 2>&1)
  echo "$n ncu rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "^prof|==ERR" /tmp/ncu_$n.log | head -3
  ncu -i /tmp/p_$n.ncu-rep --page details --csv > /tmp/det_$n.csv 2>&1
  python3 bench/gpu/ncu_details_summary.py /tmp/det_$n.csv > $OUT/details_$n.txt 2>&1
  ncu -i /tmp/p_$n.ncu-rep --page source --csv --print-source sass > /tmp/src_$n.csv 2>&1
  python3 bench/gpu/ncu_stall_summary.py < /tmp/src_$n.csv > $OUT/stall_$n.txt 2>&1
  gzip -c /tmp/src_$n.csv > $OUT/src_$n.csv.gz
done
paste -d'|' <(cut -c1-90 $OUT/details_def.txt) <(cut -c1-90 $OUT/details_v2.txt) | head -60
head -c 1500 $OUT/stall_def.txt; echo; head -c 1500 $OUT/stall_v2.txt
echo "total: $(( $(date +%s) - t0 )) s"; ls -la $OUT
