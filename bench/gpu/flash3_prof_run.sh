#!/bin/bash
# ncu profile of the flash3 forward next to torch SDPA cuDNN in one process (session 3, issue #5).
# Needs build_f3/libflash3_shim.so (flash3_gpu_run.sh). Writes $OUT/prof.ncu-rep, the details page
# as CSV, and per profiled launch a SASS stall summary (bench/gpu/ncu_stall_summary.py).
# Usage: OUT=... bench/gpu/flash3_prof_run.sh "D:S:causal,..." [variants]
set -u
OUT=${OUT:-/tmp/flash3_out}
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
cd bench/gpu
timeout ${F3_NCU_TIMEOUT:-200} ncu -k regex:'fwd_kernel|sdpa|fprop|fmha|attn|cudnn' -c ${F3_NCU_COUNT:-12} \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
  --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables \
  --section LaunchStats --section SourceCounters ${EXTRA:+--metrics $EXTRA} \
  -o $OUT/prof -f python3 flash3_prof.py --lib ../../build_f3/libflash3_shim.so --shapes "$SHAPES" \
  --variants "$VARS" > $OUT/ncu_run.log 2>&1
echo "ncu rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "^prof|==PROF==|ERR|rror" $OUT/ncu_run.log | head -30
cd ../..
ncu -i $OUT/prof.ncu-rep --page details --csv > $OUT/ncu_details.csv 2>&1
python3 - $OUT/ncu_details.csv <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
if not rows or "Kernel Name" not in rows[0]:
    print("\n".join(",".join(r) for r in rows[:5])); sys.exit()
h = rows[0]; ki, ni, ui, vi = h.index("ID"), h.index("Kernel Name"), h.index("Metric Unit"), h.index("Metric Value")
mi = h.index("Metric Name")
want = ["Duration", "SM Frequency", "Compute (SM) Throughput", "Memory Throughput", "L2 Hit Rate",
        "L1/TEX Hit Rate", "Issue Slots Busy", "Issued Warp Per Scheduler", "No Eligible", "Eligible Warps Per Scheduler",
        "Active Warps Per Scheduler", "Warp Cycles Per Issued Instruction", "Registers Per Thread",
        "Executed Ipc Active", "DRAM Throughput", "L2 Cache Throughput", "Shared Memory Throughput"]
per = collections.OrderedDict()
for r in rows[1:]:
    per.setdefault((r[ki], r[ni][:60]), {})[r[mi]] = (r[vi], r[ui])
for (k, n), m in per.items():
    print(f"-- launch {k}: {n}")
    print("   " + "; ".join(f"{w} {m[w][0]} {m[w][1]}" for w in want if w in m))
    ex = [f"{x} {m[x][0]}" for x in m if "gmma" in x or "pipe_xu" in x or "bank_conflicts" in x or "sector_hit" in x
          or "pipe_shared" in x]
    if ex: print("   " + "; ".join(ex))
    st = sorted(((float(v[0].replace(",", "")), x) for x, v in m.items() if x.startswith("Stall") or "stall" in x.lower()
                 and v[0].replace(",", "").replace(".", "").isdigit()), reverse=True)[:8]
    if st: print("   stalls: " + "; ".join(f"{x} {v:.2f}" for v, x in st))
PY
n=$(grep -c "" /dev/null)
for i in $(seq 0 $(( ${F3_NCU_COUNT:-12} - 1 ))); do
  ncu -i $OUT/prof.ncu-rep --page source --csv --print-source sass --launch-skip $i --launch-count 1 \
    > /tmp/src_$i.csv 2>&1 || break
  [ -s /tmp/src_$i.csv ] || break
  echo "== stall summary, launch $i"
  python3 bench/gpu/ncu_stall_summary.py < /tmp/src_$i.csv > $OUT/stall_$i.txt 2>&1
  head -c 2500 $OUT/stall_$i.txt
done
echo "prof total $(( $(date +%s) - t0 )) s"
