#!/usr/bin/env bash
# One GPU-machine call for the flash forward's split tail (src/backends/flash/fwd_tail.cuh):
# build math;flash at D = 256 (the only kernel with the split), run every D 256 / 200 flash test
# and the tail tests, compute-sanitizer (memcheck, racecheck) on the split-tail cases, then the
# interleaved A/B (bench/gpu/flash_tail_ab.py: tail forced on, off, auto, FA-2).
#   bench/gpu/flash_tail_run.sh OUTDIR ["AB_ARGS"]
# T_TESTS / T_SAN / T_AB: time limits (s). DIMS: ATTNKIT_HEAD_DIMS (default "256").
set -uo pipefail
OUT=$1
AB_ARGS=${2:-"--s 512,1024,2048,4096,8192,16384 --rounds 2"}
B=build-ft
cmake -S . -B $B -G Ninja -DATTNKIT_BACKENDS="math;flash" -DATTNKIT_CUDA_ARCHS=90a \
  -DATTNKIT_BUILD_CLI=OFF -DATTNKIT_HEAD_DIMS="${DIMS:-256}" >"$OUT/cfg.log" 2>&1 || { tail -20 "$OUT/cfg.log"; exit 1; }
( time ninja -C $B -j16 test_flash attnkit_c ) >"$OUT/build.log" 2>&1
grep -E "error|FAILED" "$OUT/build.log" | head -20; tail -3 "$OUT/build.log"
T=$(find $B -name test_flash -type f | head -1)
F='*d256*:*d200*:*Tail*:*tail*'
timeout "${T_TESTS:-200}" "$T" --gtest_filter="$F" --gtest_brief=1 >"$OUT/test.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]' "$OUT/test.log" | tr '\n' ' ')"
grep -E "^\[  FAILED  \]" "$OUT/test.log" | head -20
S='*tail_split_d256_bf16_fwd:*tail_split_long_d256_bf16_fwd:*tail_split_short_d256_bf16_fwd:*tail_split_nofirst_d256_bf16_fwd:*tail_split_hd200_d200_bf16_fwd:*SplitTail*'
for tool in memcheck racecheck; do
  timeout "${T_SAN:-120}" compute-sanitizer --tool $tool --error-exitcode 9 "$T" --gtest_filter="$S" --gtest_brief=1 >"$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1) $(grep -E '^\[  PASSED  \]' "$OUT/$tool.log")"
done
L=$(find $B -name 'libattnkit_c.so' | head -1)
PYTHONUNBUFFERED=1 timeout "${T_AB:-240}" python3 bench/gpu/flash_tail_ab.py --lib "$L" --json "$OUT/tail_ab.json" $AB_ARGS 2>&1 | tee "$OUT/tail_ab.txt"
