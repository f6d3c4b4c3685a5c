#!/usr/bin/env bash
# One GPU-machine session for the flash backend: build (math;flash, sm90a), run test_flash, bench
# against torch FLASH_ATTENTION (bench/gpu/flash_vs_fa2.py), then optional A/B variants of the
# tuning knobs in src/backends/flash/traits.hpp (each its own build dir, forward+backward bench).
#   bench/gpu/flash_gpu_run.sh OUTDIR "S_LIST" "D_LIST" [VARIANT_FLAGS...]
# BACKENDS (default "math;flash") picks the build; SAN=1 runs compute-sanitizer memcheck and
# racecheck on a few small test cases. NCU=1 also profiles one forward of ours and of torch's FA-2 (d = 128, s = 4096) with Nsight
# Compute (speed of light, warp states, instruction mix) into OUTDIR/ncu_*.txt.
set -uo pipefail
OUT=$1 S=$2 DS=$3
shift 3
J=16
conf() {  # build-dir head-dims extra-cuda-flags
  cmake -S . -B "$1" -G Ninja -DATTNKIT_BACKENDS="${BACKENDS:-math;flash}" -DATTNKIT_CUDA_ARCHS=90a \
    -DATTNKIT_BUILD_CLI=OFF -DATTNKIT_HEAD_DIMS="$2" -DCMAKE_CUDA_FLAGS="$3" >"$OUT/cfg_$(basename "$1").log" 2>&1
}
conf build-fg "64;96;128;192;256" "" || { tail -20 "$OUT"/cfg_build-fg.log; exit 1; }
( time ninja -C build-fg -j$J test_flash attnkit_c ) >"$OUT/build.log" 2>&1
grep -E "error|FAILED" "$OUT/build.log" | head -20
T=$(find build-fg -name test_flash -type f | head -1)
timeout 240 "$T" --gtest_brief=1 >"$OUT/test.log" 2>&1
echo "test rc=$? $(grep -c '^\[  FAILED  \]' "$OUT/test.log") failed lines"; grep -E "^\[  (FAILED|PASSED) " "$OUT/test.log" | sed 's/, where.*//' | sort -u | head -30
if [[ "${SAN:-0}" == 1 ]]; then
  F='All/FlashVsMath.MatchesOracle/plain_d64_bf16_bwd:All/FlashVsMath.MatchesOracle/causal_square_d128_bf16_bwd'
  F="$F:All/FlashVsMath.MatchesOracle/varlen_d96_f16_bwd:All/FlashVsMath.MatchesOracle/bool_mask_d256_bf16_bwd:FlashDropout.*"
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 "$T" --gtest_filter="$F" --gtest_brief=1 >"$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
  done
fi
L=$(find build-fg -name 'libattnkit_c.so' | head -1)
PYTHONUNBUFFERED=1 timeout 200 python3 bench/gpu/flash_vs_fa2.py --lib "$L" --json "$OUT/bench.json" --s "$S" --d "$DS" --reps 20 2>&1 | tee "$OUT/bench.log"
if [[ "${NCU:-0}" == 1 ]]; then
  for k in "regex:^(attnkit::flash::)?fwd_kernel" "regex:flash_fwd_kernel"; do
    n=$([[ $k == *attn* || $k == *^fwd* ]] && echo ours || echo fa2)
    timeout 120 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --section InstructionStats --section Occupancy --section LaunchStats -k "$k" -c 1 \
      python3 bench/gpu/flash_vs_fa2.py --lib "$L" --json /dev/null --s 4096 --d 128 --causal 0 \
      --reps 1 --no-bwd >"$OUT/ncu_$n.txt" 2>&1
    grep -E "Duration|Registers|Achieved Occupancy|Issue Slots Busy|SM Busy|Executed Ipc A|Compute \(SM\) Throughput|Memory Throughput|Stall|Warp Cycles Per Issued|Executed Instructions  " "$OUT/ncu_$n.txt" | head -30 | sed "s/^/[$n] /"
  done
fi
i=0
for v in "$@"; do
  i=$((i + 1))
  conf build-v$i "${VD:-64;128;256}" "$v" && ninja -C build-v$i -j$J attnkit_c >"$OUT/build_v$i.log" 2>&1 || { echo "variant $v: build failed"; continue; }
  echo "== variant $i: $v"
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/gpu/flash_vs_fa2.py --lib "$(find build-v$i -name 'libattnkit_c.so' | head -1)" \
    --json /dev/null --s 4096 --d "${VDB:-64,128,256}" --causal 0 --reps 20 2>&1 | tee -a "$OUT/bench_variants.log"
done
