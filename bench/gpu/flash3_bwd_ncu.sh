#!/bin/bash
# ncu profile of the flash3 backward's main kernel beside cuDNN's backward kernel at the same
# shapes (session 27, issue #5: where does the D 256 backward's time go; tensor pipe, shared-memory
# wavefronts, the dQ atomics' L2 traffic, warp stalls by SASS line).
# Each backend runs in its own bench/peers.py process under ncu (--runs 1 --warmup 0: a shape's
# backward launches 4 times: the spot-check, the timer's first call and probe, the timed call;
# all are profiled, the 4th of each shape is summarised).
#   OUT=dir LIB=build_sm/libattnkit_c.so bash bench/gpu/flash3_bwd_ncu.sh [D] [S list] [causal]
#   defaults: 256, 1k,4k, both. Writes $OUT/ncu.txt (details and stall summaries, appended) and
#   $OUT/ncu_reps.tgz (the reports); ~40 s per backend and shape pair.
set -u
OUT=${OUT:-/tmp/bwd_ncu}
LIB=${LIB:-build_sm/libattnkit_c.so}
D=${1:-256}
SHAPES=${2:-1k,4k}
CAUSAL=${3:-both}
mkdir -p "$OUT" /tmp/bwd_ncu
T="$OUT/ncu.txt"
M=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed_pipe_tensor_op_gmma.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,lts__t_sectors_op_red.sum
M=$M,lts__t_sectors_op_atom.sum,lts__t_sectors.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,lts__t_sectors_srcunit_tex_op_red.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum
for be in flash3 cudnn; do
  if [ $be = flash3 ]; then k='regex:^bwd_kernel'; else k='regex:bprop'; fi
  rep=/tmp/bwd_ncu/${be}_d${D}
  t0=$(date +%s)
  timeout ${NCU_TIMEOUT:-240} ncu -k "$k" -c ${NCU_COUNT:-16} --import-source yes \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section SourceCounters \
    --metrics "$M" -f -o $rep python3 bench/peers.py --lib "$LIB" --backends $be --peers "" \
    --passes bwd --d $D --shapes $SHAPES --causal $CAUSAL --runs 1 --warmup 0 --pause 0 \
    --no-preflight > /tmp/bwd_ncu/${be}_d${D}.log 2>&1
  echo "== $be D $D S $SHAPES causal $CAUSAL: ncu rc=$? ($(($(date +%s) - t0)) s)" | tee -a "$T"
  grep -E "==PROF==|rror" /tmp/bwd_ncu/${be}_d${D}.log | head -5 | tee -a "$T"
  for i in $(seq 3 4 $((${NCU_COUNT:-16} - 1))); do  # the timed call of each shape
    ncu -i $rep.ncu-rep --page details --csv --launch-skip $i --launch-count 1 \
      > /tmp/bwd_ncu/details.csv 2>&1
    python3 bench/gpu/ncu_details_summary.py /tmp/bwd_ncu/details.csv >> "$T" 2>&1
    ncu -i $rep.ncu-rep --page source --csv --print-source sass --launch-skip $i \
      --launch-count 1 > /tmp/bwd_ncu/src.csv 2>&1 || break
    [ -s /tmp/bwd_ncu/src.csv ] || break
    echo "== $be stall summary, launch $i" >> "$T"
    python3 bench/gpu/ncu_stall_summary.py < /tmp/bwd_ncu/src.csv 2>&1 | head -60 >> "$T"
  done
done
tar -C /tmp/bwd_ncu -czf "$OUT/ncu_reps.tgz" $(cd /tmp/bwd_ncu && ls *.ncu-rep)
grep -E "^== |^-- launch|Duration" "$T" | head -40
