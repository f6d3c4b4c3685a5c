#!/bin/bash
# ncu profile of the flash3 forward next to torch SDPA cuDNN in one process (session 3, issue #5).
# Needs build_f3/libflash3_shim.so (flash3_gpu_run.sh). Writes $OUT/prof.ncu-rep, the details page
# as CSV, and per profiled launch a SASS stall summary (bench/gpu/ncu_stall_summary.py).
# Usage: OUT=... bench/gpu/flash3_prof_run.sh "D:S:causal,..." [variants]
# Env: F3_NCU_COUNT (launches profiled, 12), F3_NCU_TIMEOUT (s, 200), F3_NCU_SRC_TGZ and
# F3_NCU_TRY_METRICS (session 35, below). The device returns at most 8 files: give OUT a scratch
# directory (/tmp/p) and copy what matters under the device's $OUT.
set -u
OUT=${OUT:-/tmp/flash3_out}
mkdir -p "$OUT"  # (session 36: a missing OUT cost a whole device call)
SHAPES=${1:-128:1024:0,128:16384:0,256:4096:0}
VARS=${2:-}
t0=$(date +%s)
ncu --query-metrics --chip gh100 > /tmp/ncu_metrics.txt 2>&1
EXTRA=""
for m in sm__pipe_tensor_op_gmma_cycles_active sm__inst_executed_pipe_tensor_op_gmma \
         smsp__inst_executed_pipe_xu sm__pipe_shared_cycles_active \
         l1tex__data_bank_conflicts_pipe_lsu_mem_shared lts__t_sector_hit_rate; do
  grep -q "^$m " /tmp/ncu_metrics.txt && EXTRA="$EXTRA,$m.avg.pct_of_peak_sustained_active,$m.sum"
done
grep -iE "gmma|tensor_op" /tmp/ncu_metrics.txt | head -12
EXTRA=${EXTRA#,}
echo "extra metrics: $EXTRA"
# ncu over flash3_prof.py's launches (one per implementation, shape and variant):
# prof_ncu REPORT LOG [ncu options ...]
prof_ncu() {
  local rep=$1 log=$2
  shift 2
  (cd bench/gpu && timeout ${F3_NCU_TIMEOUT:-200} ncu -k regex:'fwd_kernel|sdpa|fprop|fmha|attn|cudnn' \
    -c ${F3_NCU_COUNT:-12} "$@" -o "$rep" -f python3 flash3_prof.py \
    --lib ../../build_f3/libflash3_shim.so --shapes "$SHAPES" --variants "$VARS" > "$log" 2>&1)
}
prof_ncu $OUT/prof $OUT/ncu_run.log --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section SourceCounters \
  ${EXTRA:+--metrics $EXTRA}
echo "ncu rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "^prof|==PROF==|ERR|rror" $OUT/ncu_run.log | head -30
ncu -i $OUT/prof.ncu-rep --page details --csv > $OUT/ncu_details.csv 2>&1
python3 bench/gpu/ncu_details_summary.py $OUT/ncu_details.csv
for i in $(seq 0 $(( ${F3_NCU_COUNT:-12} - 1 ))); do
  ncu -i $OUT/prof.ncu-rep --page source --csv --print-source sass --launch-skip $i --launch-count 1 \
    > /tmp/src_$i.csv 2>&1 || break
  [ -s /tmp/src_$i.csv ] || break
  echo "== stall summary, launch $i"
  python3 bench/gpu/ncu_stall_summary.py < /tmp/src_$i.csv > $OUT/stall_$i.txt 2>&1
  head -c 2500 $OUT/stall_$i.txt
done
# Session 35: F3_NCU_SRC_TGZ=FILE keeps every launch's whole source page (SASS lines with their
# stall samples and executed counts; cuDNN's kernel too) in one archive, for reading offline.
if [ -n "${F3_NCU_SRC_TGZ:-}" ]; then
  (cd /tmp && tar czf "$F3_NCU_SRC_TGZ" src_*.csv) && echo "source pages: $F3_NCU_SRC_TGZ"
fi
# F3_NCU_TRY_METRICS="m1,m2": one more ncu pass with only these metrics, in a run of its own so
# that a name this ncu does not accept costs that run only (the query list above is not proof:
# some names appear only with a section prefix). Values per launch in $OUT/try_metrics.txt.
if [ -n "${F3_NCU_TRY_METRICS:-}" ]; then
  prof_ncu /tmp/try_metrics /tmp/try_metrics.log --metrics "$F3_NCU_TRY_METRICS"
  echo "try-metrics ncu rc=$?"; grep -E "==ERROR==|rror" /tmp/try_metrics.log | head -5
  ncu -i /tmp/try_metrics.ncu-rep --page raw --csv 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
if len(rows) > 2:
    head = rows[0]
    keep = [i for i, h in enumerate(head) if h in ("ID", "Kernel Name") or "__" in h
            and not h.startswith(("device__", "launch__", "numa__", "nvlink__", "profiler__"))]
    for r in [rows[0]] + rows[2:]:
        print(" | ".join(r[i][:60] for i in keep))' > "$OUT/try_metrics.txt" 2>&1
  cat "$OUT/try_metrics.txt"
fi
echo "prof total $(( $(date +%s) - t0 )) s"
