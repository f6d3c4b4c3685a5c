#!/bin/bash
# One GPU-machine session for the flash3 backward: official CMake build (math + flash3, D 64;128,
# sm_90a) of test_flash3 and libattnkit_c plus the standalone A/B tool, SASS facts, tests,
# compute-sanitizer subset, A/B timings (dQ bulk reduce vs atomics), peer benchmark.
# Usage: OUT=dir bench/gpu/flash3_bwd_gpu_run.sh ["peers.py args"]; at most 8 files under $OUT:
# build.log test.log sanitizer.log ab.log bench.log bench.json bench.md summary.txt (+ ncu.log
# inside the others' place when F3B_NCU=1: it replaces bench.log, which then goes to summary).
# F3B_PEERS: the peers.py peer list (default cudnn,flash).
# Phase limits (s): F3B_BUILD_T (300) F3B_TEST_T (200) F3B_SAN_T (60 per tool) F3B_BENCH_T (150);
# F3B_DEADLINE (s from start, default 420): the bench and ncu phases only start while time is
# left and are cut to it. summary.txt names the A/B's fastest variant per (D, causal).
# Session 4: the peer bench runs before the ncu phases and its log goes into ncu.tgz (8-file
# limit); F3B_NCU_SRC="D:variant ..." profiles one launch per variant (S = 4k non-causal) with
# source-level warp-stall sampling (SASS page as CSV + bench/gpu/ncu_stall_summary.py), and
# F3B_NCU_CUDNN="64 128" the same for torch SDPA's cuDNN backward (all kernels of one backward
# call); everything ncu writes lands in $OUT/ncu.tgz (re-packed after each step).
set -u
OUT=${OUT:-/tmp/f3bwd_out}
mkdir -p "$OUT"
B=build-f3bwd
S=$OUT/summary.txt
: > "$S"
BENCH_ARGS=${1:---shapes 1k,4k,16k --d 64,128 --causal both --passes fwd,bwd}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
} > "$OUT/build.log" 2>&1
t0=$(date +%s)
( nvcc -std=c++20 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I include -I src \
    bench/gpu/flash3_bwd_ab.cu src/cuda/workspace.cpp \
    src/backends/flash3/instantiations/bwd_d64_bf16.cu src/backends/flash3/instantiations/bwd_d128_bf16.cu \
    -o /tmp/flash3_bwd_ab > /tmp/ab_build.log 2>&1 ) &
AB_PID=$!
# F3B_AB_OLD_DEFS (e.g. "-DATTNKIT_FLASH3_BWD_SHARED_BASE=0"): a second A/B binary built with
# these defines; the A/B then runs both per config, back to back (names suffixed "@old").
if [ -n "${F3B_AB_OLD_DEFS:-}" ]; then
  ( nvcc -std=c++20 -O3 -lineinfo $F3B_AB_OLD_DEFS -gencode=arch=compute_90a,code=sm_90a -I include -I src \
      bench/gpu/flash3_bwd_ab.cu src/cuda/workspace.cpp \
      src/backends/flash3/instantiations/bwd_d64_bf16.cu src/backends/flash3/instantiations/bwd_d128_bf16.cu \
      -o /tmp/flash3_bwd_ab_old > /tmp/ab_old_build.log 2>&1 ) &
  AB_OLD_PID=$!
fi
timeout ${F3B_BUILD_T:-300} bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNKIT_CUDA=ON \
  -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS='64;128' -DATTNKIT_BACKENDS='math;flash3' \
  -DATTNKIT_BUILD_CLI=OFF -DATTNKIT_BUILD_PYTHON=OFF && ninja -C $B -j16 test_flash3 attnkit_c" >> "$OUT/build.log" 2>&1
echo "build rc=$? ($(( $(date +%s) - t0 )) s)" | tee -a "$S"
wait $AB_PID; echo "ab tool build rc=$?" | tee -a "$S"; cat /tmp/ab_build.log >> "$OUT/build.log"
if [ -n "${F3B_AB_OLD_DEFS:-}" ]; then
  wait $AB_OLD_PID; echo "ab tool (old: $F3B_AB_OLD_DEFS) build rc=$?" | tee -a "$S"
  cat /tmp/ab_old_build.log >> "$OUT/build.log"
fi
grep -E "error|warning.*(wgmma|serializ)" "$OUT/build.log" | head -10 | tee -a "$S"
for o in $B/src/backends/flash3/CMakeFiles/attnkit_backend_flash3.dir/instantiations/bwd_*bf16*.o; do
  [ -f "$o" ] || continue
  echo "SASS $(basename $o): HGMMA $(cuobjdump --dump-sass $o | grep -c HGMMA), LDL/STL $(cuobjdump --dump-sass $o | grep -cE 'LDL|STL'), REDs $(cuobjdump --dump-sass $o | grep -cE 'RED|ATOM'), UBLKRED $(cuobjdump --dump-sass $o | grep -cE 'UBLKRED|BULK')" | tee -a "$S"
  # Per kernel: registers / stack (spills) / shared.
  cuobjdump -res-usage "$o" 2>/dev/null | grep -A1 "bwd_kernel" | grep -oE "bwd_kernelI[^ ]*|REG:[0-9]+|STACK:[0-9]+" | paste - - - | tee -a "$S"
done

if [ -x $B/tests/test_flash3 ]; then
  # F3B_TEST_FILT (session 5): a gtest filter for this phase (e.g. the backward tests only, when
  # the full suite does not fit the call: it ran past 140 s on the H100 in session 5).
  timeout ${F3B_TEST_T:-200} $B/tests/test_flash3 --gtest_brief=1 \
    ${F3B_TEST_FILT:+--gtest_filter=$F3B_TEST_FILT} > "$OUT/test.log" 2>&1
  echo "test_flash3 rc=$?" | tee -a "$S"
  grep -E "^\[  (PASSED|FAILED) |tests ran" "$OUT/test.log" | tee -a "$S"
  echo "skipped: $(grep -c '\[  SKIPPED \]' "$OUT/test.log")" | tee -a "$S"
  grep -E "^\[  FAILED  \]" "$OUT/test.log" | sort -u | head -30 >> "$S"
  # A default variant failing while run 2's decoupled kernel passes: bench that one.
  if grep -qE "^\[  FAILED  \] (Cases/Flash3Backward\.MatchesOracle/|.*Hostile.*_bwd)" "$OUT/test.log" &&
     ! grep -qE "^\[  FAILED  \] Cases/Flash3Backward\.MatchesOracleDecoupled/" "$OUT/test.log"; then
    export ATTNKIT_FLASH3_BWD_VARIANT="64:decoupled+atomic;128:decoupled+bulk"
    echo "default backward variant FAILED tests: benchmarking run 2's decoupled kernels" | tee -a "$S"
  fi
  FILT='*Sm90BwdPtx*:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleCoupled/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOracleDqAtomics/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Hostile*bf16_bshd_b2_sq13_sk13_h2x1_d64_causalTL_bwd:*Flash3Backward.MatchesOracleCoupledDqFirst/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleBm128/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOracleBm128DqFirstBulk/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracleBm128DqFirstShfl/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalBR_bwd:*Flash3Backward.MatchesOracleDecoupledDqFirst/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOraclePrefetch/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOraclePrefetch/f16_bshd_b2_sq517_sk300_h2x1_d128_causalBR_bwd:*Flash3Backward.MatchesOracleDecoupledBulkPrefetch/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracle/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOracleKVRegsBulkDqFirst/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracleV4Rot/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracleV4Rot/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleV4RotOtherDq/bf16_bshd_b1_sq300_sk517_h4x2_d128_bwd:*Flash3Backward.MatchesOracleKVRegsV4Rot/bf16_bshd_b1_sq300_sk517_h4x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq512_sk512_h2x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracle/bf16_bshd_b1_sq512_sk512_h2x2_d128_causalTL_bwd:*Flash3Backward.MatchesOracleWaitHint/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleWaitHintOther/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracleDvEarly/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleDvEarly/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracleDvEarly/bf16_bshd_b1_sq512_sk512_h2x2_d64_causalTL_bwd:*Flash3Backward.MatchesOracleDvEarlyOther/bf16_bshd_b1_sq300_sk517_h4x2_d128_bwd:*Flash3Backward.MatchesOracleDvEarlyOther/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOraclePrefetchLate/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOraclePrepVec/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOraclePrepVec/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOraclePrepVec/bf16_bhsd_b2_sq200_sk333_h4x2_d128_causalTL_bwd:*Flash3BackwardLayout.ConvertVecBitwiseEqual:*Flash3Backward.MatchesOracleIdiet/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleIdiet/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd:*Flash3Backward.MatchesOracleIdietOther/f16_bshd_b2_sq517_sk300_h2x1_d64_causalBR_bwd:*Flash3Backward.MatchesOracleIdietOther/bf16_bshd_b1_sq300_sk517_h4x2_d128_bwd:*Flash3Backward.MatchesOracleTmaKV/bf16_bshd_b1_sq300_sk517_h4x2_d128_causalBR_bwd:*Flash3Backward.MatchesOracleTmaKV/bf16_bshd_b1_sq300_sk517_h4x2_d64_bwd'
  # F3B_SAN_FILT (session 9): a gtest filter replacing the subset above for both tools (e.g. only
  # the cases of a new variant, so that racecheck finishes inside F3B_SAN_T).
  FILT=${F3B_SAN_FILT:-$FILT}
  : > "$OUT/sanitizer.log"
  for tool in memcheck racecheck; do
    echo "==== $tool" >> "$OUT/sanitizer.log"
    timeout ${F3B_SAN_T:-60} compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/test_flash3 \
      --gtest_filter="$FILT" --gtest_brief=1 >> "$OUT/sanitizer.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|tests ran|PASSED' "$OUT/sanitizer.log" | tail -3 | tr '\n' ' ')" | tee -a "$S"
  done
fi

if [ -x /tmp/flash3_bwd_ab ]; then
  if [ -x /tmp/flash3_bwd_ab_old ]; then
    CFGS=${F3B_AB_CFGS:-"1024,64,0 1024,128,0 4096,64,0 4096,64,1 4096,128,0 4096,128,1 16384,64,0 16384,64,1 16384,128,0 16384,128,1"}
    : > "$OUT/ab.log"
    abt0=$(date +%s)
    for c in $CFGS; do
      [ $(( $(date +%s) - abt0 )) -lt ${F3B_AB_T:-120} ] || { echo "ab: out of time at $c" >> "$OUT/ab.log"; break; }
      timeout 60 /tmp/flash3_bwd_ab $c >> "$OUT/ab.log" 2>&1
      F3AB_SUFFIX=@old timeout 60 /tmp/flash3_bwd_ab_old $c >> "$OUT/ab.log" 2>&1
    done
    echo "ab (new, @old) done" | tee -a "$S"
  else
    timeout ${F3B_AB_T:-120} /tmp/flash3_bwd_ab ${F3B_AB_CFGS:-} > "$OUT/ab.log" 2>&1
    echo "ab rc=$?" | tee -a "$S"
  fi
  cat "$OUT/ab.log" >> "$S"
fi

# The A/B's fastest variant per (D, causal) (TFLOP/s summed over S = 4k and 16k), for the
# record; the peers bench runs the library's defaults unless F3B_VARIANT_ENV=1, which exports
# ATTNKIT_FLASH3_BWD_VARIANT with the best non-causal variant per D (only if no backward test
# failed).
if [ -s "$OUT/ab.log" ]; then
  BEST=$(python3 - "$OUT/ab.log" <<'PY'
import re, sys
t = {}
for line in open(sys.argv[1]):
    m = re.match(r"S=\s*(\d+) D=\s*(\d+) causal=(\d) (\S+)\s+\S+ ms\s+(\S+) TFLOP", line)
    if m and int(m.group(1)) in (4096, 16384):
        k = (int(m.group(2)), int(m.group(3)), m.group(4))
        t[k] = t.get(k, 0.0) + float(m.group(5))
env = []
for d in (64, 128):
    for c in (0, 1):
        cands = {v: x for (dd, cc, v), x in t.items() if dd == d and cc == c}
        if not cands:
            continue
        best = max(cands, key=cands.get)
        dflt = cands.get("default", 0.0)
        print(f"# D={d} causal={c}: best {best} {cands[best]:.0f} vs default {dflt:.0f} (summed TFLOP/s)", file=sys.stderr)
        if c == 0 and best != "default":
            env.append(f"{d}:{best}")
print(";".join(env))
PY
)
  if [ "${F3B_VARIANT_ENV:-0}" = 1 ] && [ -n "$BEST" ] && \
     ! grep -qE "^\[  FAILED  \] .*(Backward|_bwd)" "$OUT/test.log" 2>/dev/null; then
    export ATTNKIT_FLASH3_BWD_VARIANT="$BEST"
  fi
  echo "bench variant: ${ATTNKIT_FLASH3_BWD_VARIANT:-library defaults}" | tee -a "$S"
fi
F3B_DEADLINE=${F3B_DEADLINE:-420}
left() { echo $(( F3B_DEADLINE - ($(date +%s) - t0) )); }

mkdir -p /tmp/ncu
pack() { tar -C /tmp -czf "$OUT/ncu.tgz" ncu 2>/dev/null; }
if [ -f $B/libattnkit_c.so ] && [ "${F3B_BENCH:-1}" = 1 ] && [ "$(left)" -gt 60 ]; then
  BT=${F3B_BENCH_T:-150}; [ "$BT" -gt "$(left)" ] && BT=$(left)
  echo "bench (limit $BT s)" | tee -a "$S"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout $BT python3 bench/peers.py --lib $B/libattnkit_c.so \
    --backends flash3 --peers ${F3B_PEERS:-cudnn,flash} --json "$OUT/bench.json" --md "$OUT/bench.md" \
    --commit "${ATTNKIT_COMMIT:-}" $BENCH_ARGS > /tmp/ncu/bench.log 2>&1
  echo "bench rc=$?" | tee -a "$S"
  [ -s "$OUT/bench.json" ] && python3 bench/peers.py --summarize "$OUT/bench.json" 2>&1 | tail -40 | tee -a "$S"
fi
pack
# Hardware counters of one main-kernel launch per listed A/B variant (S = 4k non-causal):
# F3B_NCU="D:variant ..." (e.g. "64:decoupled+atomic 64:m128+atomic+dqf").
if [ -n "${F3B_NCU:-}" ] && [ -x /tmp/flash3_bwd_ab ]; then
  : > "$OUT/ncu.log"
  for dv in $F3B_NCU; do
    [ "$(left)" -gt 25 ] || { echo "ncu: no time left for $dv" | tee -a "$S"; break; }
    d=${dv%%:*}; v=${dv#*:}
    echo "==== ncu D=$d $v" >> "$OUT/ncu.log"
    F3AB_ONLY=$v F3AB_REPS=1 timeout $(( $(left) - 5 )) ncu --clock-control none -k regex:bwd_kernel \
      --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --print-details all \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active,smsp__inst_executed.avg.per_cycle_active \
      /tmp/flash3_bwd_ab 4096,$d,0 >> "$OUT/ncu.log" 2>&1
    echo "ncu $dv rc=$?" | tee -a "$S"
  done
  grep -E "====|Duration|Compute \(SM\) Throughput|Memory Throughput|hmma|wavefronts_mem_shared|per_cycle_active|Stall|Warp Cycles Per Issued" "$OUT/ncu.log" | head -60 >> "$S"
fi
if [ -n "${F3B_NCU_SRC:-}" ] && [ -x /tmp/flash3_bwd_ab ]; then
  for dv in $F3B_NCU_SRC; do
    [ "$(left)" -gt 25 ] || { echo "ncu-src: no time left for $dv" | tee -a "$S"; break; }
    d=${dv%%:*}; v=${dv#*:}; tag=ours_d${d}_${v//+/_}
    F3AB_ONLY=$v F3AB_REPS=1 timeout $(( $(left) - 5 )) ncu --clock-control none -k regex:bwd_kernel \
      --launch-skip 2 --launch-count 1 --import-source yes --section SourceCounters \
      --section WarpStateStats --section SpeedOfLight --section LaunchStats -f -o /tmp/ncu/$tag \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
      /tmp/flash3_bwd_ab 4096,$d,0 > /tmp/ncu/$tag.log 2>&1
    echo "ncu-src $dv rc=$?" | tee -a "$S"
    ncu --import /tmp/ncu/$tag.ncu-rep --page details > /tmp/ncu/$tag.details.txt 2>&1
    grep -E "Duration|hmma|Warp Cycles Per Issued|Issued Warp" /tmp/ncu/$tag.details.txt | head -8 >> "$S"
    ncu --import /tmp/ncu/$tag.ncu-rep --page source --csv --print-source sass > /tmp/ncu/$tag.src.csv 2>&1
    python3 bench/gpu/ncu_stall_summary.py < /tmp/ncu/$tag.src.csv > /tmp/ncu/$tag.stalls.txt 2>&1
    head -45 /tmp/ncu/$tag.stalls.txt >> "$S"
    pack
  done
fi
if [ -n "${F3B_NCU_CUDNN:-}" ]; then
  cat > /tmp/ncu/cudnn_bwd.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
d = int(sys.argv[1]); S = 4096; B = 16384 // S; H = 2048 // d
q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for i in range(3):
        o = F.scaled_dot_product_attention(q, k, v)
        g = torch.randn_like(o)
        torch.cuda.synchronize()
        if i == 2: torch.cuda.profiler.start()
        o.backward(g)
        torch.cuda.synchronize()
        if i == 2: torch.cuda.profiler.stop()
print("ok", torch.backends.cudnn.version())
PY
  for d in $F3B_NCU_CUDNN; do
    [ "$(left)" -gt 30 ] || { echo "ncu-cudnn: no time left for D=$d" | tee -a "$S"; break; }
    tag=cudnn_d$d
    timeout $(( $(left) - 5 )) ncu --clock-control none --profile-from-start off --import-source yes \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight --section LaunchStats \
      --section Occupancy --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
      -f -o /tmp/ncu/$tag python3 /tmp/ncu/cudnn_bwd.py $d > /tmp/ncu/$tag.log 2>&1
    echo "ncu-cudnn D=$d rc=$?" | tee -a "$S"
    ncu --import /tmp/ncu/$tag.ncu-rep --print-summary per-kernel > /tmp/ncu/$tag.summary.txt 2>&1
    ncu --import /tmp/ncu/$tag.ncu-rep --page details > /tmp/ncu/$tag.details.txt 2>&1
    ncu --import /tmp/ncu/$tag.ncu-rep --page source --csv --print-source sass > /tmp/ncu/$tag.src.csv 2>&1
    python3 bench/gpu/ncu_stall_summary.py < /tmp/ncu/$tag.src.csv > /tmp/ncu/$tag.stalls.txt 2>&1
    grep -E "^  [a-zA-Z_].*\(|Grid Size|Block Size|Registers Per|Dynamic Shared|Duration|hmma|Warp Cycles Per Issued" /tmp/ncu/$tag.details.txt | head -40 >> "$S"
    pack
  done
fi
pack
echo "total $(( $(date +%s) - t0 )) s" | tee -a "$S"
