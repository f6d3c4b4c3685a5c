#!/bin/bash
# One device call for bench/gpu/wgmma_rate_probe.cu: the operand check and the rate table, then
# the SM clock and power sampled (nvidia-smi, 100 ms) during a long run of the probe's GEMM-like
# loop and during cuBLAS bf16 8192^3, to put the probe's per-clock rates beside cuBLAS's.
# Usage: OUT=dir bash bench/gpu/wgmma_rate_run.sh; writes probe.txt, wgmma_rate.json, clocks.txt.
set -u
OUT=${OUT:-/tmp/wgmma_out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
nvcc -std=c++20 -O3 -I src --generate-code=arch=compute_90a,code=sm_90a \
  bench/gpu/wgmma_rate_probe.cu -o /tmp/wgmma_rate_probe || exit 1
/tmp/wgmma_rate_probe --json "$OUT/wgmma_rate.json" > "$OUT/probe.txt" 2>&1
sample() {  # $1: label; runs the rest of the arguments with the clock sampled
  local label=$1; shift
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 \
    > "$OUT/clk_$label.csv" 2>/dev/null &
  local sp=$!
  "$@" > "$OUT/run_$label.txt" 2>&1
  kill $sp 2>/dev/null; wait $sp 2>/dev/null
  # median SM clock (MHz) and power (W) of the busy samples (> 300 W: python's start-up, idle,
  # is most of the cuBLAS run's samples)
  python3 - "$OUT/clk_$label.csv" "$label" <<'PY' >> "$OUT/clocks.txt"
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    try:
        rows.append(tuple(float(x) for x in line.split(",")[:2]))
    except ValueError:
        pass
busy = [r for r in rows if r[1] > 300] or rows
print(f"{sys.argv[2]}: {len(rows)} samples, {len(busy)} busy: SM clock median "
      f"{statistics.median(r[0] for r in busy):.0f} MHz (min {min(r[0] for r in busy):.0f}), "
      f"power median {statistics.median(r[1] for r in busy):.0f} W")
PY
}
sample probe_gemm /tmp/wgmma_rate_probe --mode gemm --iters 300000
sample cublas python3 -c "
import torch
a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16); b = torch.randn_like(a)
for _ in range(5): a @ b
torch.cuda.synchronize()
e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
e0.record()
for _ in range(2000): a @ b  # ~3 s: long enough for the 100 ms clock samples (200 were not)
e1.record(); torch.cuda.synchronize()
print('cuBLAS bf16 8192^3: %.1f TFLOP/s' % (2 * 8192**3 * 2000 / e0.elapsed_time(e1) / 1e9))
"
grep -E "check|CHECK" "$OUT/probe.txt"
grep -v check "$OUT/probe.txt"
tail -4 "$OUT/run_probe_gemm.txt"; cat "$OUT/run_cublas.txt" "$OUT/clocks.txt"
