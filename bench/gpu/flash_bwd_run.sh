#!/usr/bin/env bash
# One lent-GPU run for the flash backend work (bench/notes/flash.md), inside the 8-minute budget:
#   1. tools/gpu/run_all.sh: build math + cuda_math + flash (all head dims), test_core,
#      test_cuda_math, test_flash                                          -> OUT/r/{build,ctest}.log
#   2. peer bench, flash vs torch flash (FA-2), same process          -> OUT/bench.{json,md,log}
#   3. compute-sanitizer memcheck + racecheck on a test_flash subset     -> OUT/r/sanitizer.log
#   4. optional A/B: one extra build per AB_FLAGS entry (';'-separated CUDA define sets; flash,
#      D = AB_DIMS only, built in the background during 2-3), benchmarked on AB_BENCH -> OUT/ab.log
#   5. optional Nsight Compute (NCU=1): bench/gpu/flash_ncu.py under ncu --set full, ours and
#      torch FA-2 forward + fused backward, once per NCU_ARGS entry    -> OUT/r/ncuI.{ncu-rep,txt}
# OUT/r is packed into OUT/logs.tgz at the end: 5 files come back (bench.{json,md,log}, ab.log,
# logs.tgz; the lent machine returns at most 8).
#
#   bench/gpu/flash_bwd_run.sh OUT [BENCH_ARGS]
# Environment: AB_FLAGS (e.g. "-DATTNKIT_FLASH_SPLIT_ADDR=0;-DATTNKIT_FLASH_FWD_BN_128=64"; empty =
#   no A/B), AB_DIMS (head dims of each A/B build: one entry for all, or ';'-separated, one per
#   AB_FLAGS entry, dims inside an entry ','-separated, e.g. "256;128;64,128"; default 128),
#   AB_BENCH (';'-separated peers.py arguments, one per AB_FLAGS entry, default "--shapes 4k
#   --d 128 --causal both --passes fwd,bwd" for each), SAN_FILTER (gtest filter for the
#   sanitizer), SAN_GTEST (test_flash's extra arguments under the sanitizer, default
#   --gtest_brief=1; set it empty to get the [ RUN ] lines that name the case each hazard
#   follows), NCU / NCU_ARGS (';'-separated flash_ncu.py argument sets, default "--s 4096 --d 128"),
#   T_TESTS / T_BENCH / T_SAN / T_AB / T_NCU (seconds).
set -uo pipefail
OUT=$1
BENCH_ARGS=${2:-"--shapes 1k,4k,16k --d 64,128,256 --causal both --passes bwd"}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
mkdir -p "$OUT/r"
T0=$(date +%s)
el() { echo "==== [$(($(date +%s) - T0)) s] $*"; }

AB_FLAGS=${AB_FLAGS:-}
IFS=';' read -r -a AB_LIST <<<"$AB_FLAGS"
IFS=';' read -r -a AB_BENCH_LIST <<<"${AB_BENCH:-}"
IFS=';' read -r -a AB_DIMS_LIST <<<"${AB_DIMS:-128}"
ab_dims() { local d=${AB_DIMS_LIST[$1]:-${AB_DIMS_LIST[0]}}; echo "${d//,/;}"; }
AB_PIDS=()
for i in "${!AB_LIST[@]}"; do  # built in the background from the start, niced below the main build
  echo "==== A/B $i: ${AB_LIST[$i]} (head dims $(ab_dims "$i"))" >>"$OUT/ab.log"
  (cmake -S . -B "build-ab$i" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNKIT_CUDA=ON \
    -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="$(ab_dims "$i")" -DATTNKIT_BACKENDS="math;flash" \
    -DATTNKIT_BUILD_TESTS=OFF -DATTNKIT_BUILD_CLI=OFF -DCMAKE_CUDA_FLAGS="${AB_LIST[$i]}" \
    >"build-ab$i.log" 2>&1 && nice -n 19 cmake --build "build-ab$i" -j 16 --target attnkit_c \
    >>"build-ab$i.log" 2>&1 || { echo "A/B $i: build failed"; tail -20 "build-ab$i.log"; } \
    >>"$OUT/ab.log") &
  AB_PIDS+=($!)
done

el "build + tests (run_all.sh)"
ATTNKIT_TEST_TIMEOUT=${T_TESTS:-200} tools/gpu/run_all.sh "$OUT/r" --backends cuda_math,flash \
  --no-sanitizer --no-bench

el "peer bench: $BENCH_ARGS"
PYTHONUNBUFFERED=1 timeout "${T_BENCH:-240}" python3 bench/peers.py \
  --lib build-gpu/libattnkit_c.so --backends flash --peers flash --json "$OUT/bench.json" \
  --md "$OUT/bench.md" --commit "${ATTNKIT_COMMIT:-}" --pause 0.5 --no-preflight $BENCH_ARGS \
  >"$OUT/bench.log" 2>&1
tail -n 45 "$OUT/bench.log"

el "compute-sanitizer"
FILTER=${SAN_FILTER:-"*FlashVsMath*causal_square_d256_bf16_fwd:*FlashVsMath*gqa8_d64_bf16_bwd:*FlashVsMath*causal_square_d64_bf16_bwd:*FlashVsMath*causal_tl_d128_bf16_bwd:*FlashVsMath*varlen_d256_bf16_bwd:*FlashVsMath*dropout_d128_bf16_bwd:*FlashVsMath*window_d192_bf16_bwd:*FlashVsMath*plain_d96_bf16_bwd_det:*FlashDeterminism*"}
SAN_GTEST=${SAN_GTEST-"--gtest_brief=1"}
for tool in memcheck racecheck; do
  echo "==== $tool" >>"$OUT/r/sanitizer.log"
  # shellcheck disable=SC2086
  timeout "${T_SAN:-90}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
    build-gpu/tests/test_flash --gtest_filter="$FILTER" $SAN_GTEST \
    >>"$OUT/r/sanitizer.log" 2>&1
  # racecheck's hazards are counted in its own summary line (warnings do not reach ERROR SUMMARY)
  echo "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED' "$OUT/r/sanitizer.log" |
    tail -2 | tr '\n' ' ')"
done

for i in "${!AB_LIST[@]}"; do
  el "A/B $i (${AB_LIST[$i]}): waiting for its build"
  wait "${AB_PIDS[$i]}"
  [[ -f build-ab$i/libattnkit_c.so ]] || continue
  el "A/B $i bench"
  echo "==== A/B $i bench: ${AB_LIST[$i]}" >>"$OUT/ab.log"
  ab_args=${AB_BENCH_LIST[$i]:-"--shapes 4k --d 128 --causal both --passes fwd,bwd"}
  echo "peers.py $ab_args" >>"$OUT/ab.log"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout "${T_AB:-60}" python3 bench/peers.py \
    --lib "build-ab$i/libattnkit_c.so" --backends flash --peers flash --pause 0.5 --no-preflight \
    $ab_args >"$OUT/r/ab_last.txt" 2>&1
  cat "$OUT/r/ab_last.txt" >>"$OUT/ab.log"
  grep -E '^(fwd|bwd) ' "$OUT/r/ab_last.txt"
done
rm -f "$OUT/r/ab_last.txt"

if [[ ${NCU:-0} == 1 ]]; then
  IFS=';' read -r -a NCU_LIST <<<"${NCU_ARGS:---s 4096 --d 128}"
  for i in "${!NCU_LIST[@]}"; do
    el "ncu $i: flash_ncu.py ${NCU_LIST[$i]}"
    # shellcheck disable=SC2086
    timeout "${T_NCU:-120}" ncu --profile-from-start off --clock-control none --set full \
      -k regex:'fwd_kernel|bwd_fused_kernel|flash_bwd_dq_dk_dv' -c 4 -f -o "$OUT/r/ncu$i" \
      python3 bench/gpu/flash_ncu.py --lib build-gpu/libattnkit_c.so ${NCU_LIST[$i]} \
      >"$OUT/r/ncu$i.log" 2>&1
    echo "ncu exit $?"
    tail -3 "$OUT/r/ncu$i.log"
    if [[ -f $OUT/r/ncu$i.ncu-rep ]]; then
      ncu -i "$OUT/r/ncu$i.ncu-rep" --page details >"$OUT/r/ncu$i.txt" 2>&1
      ncu -i "$OUT/r/ncu$i.ncu-rep" --page raw --csv >"$OUT/r/ncu${i}_raw.csv" 2>&1
      grep -E '^  [a-zA-Z_].*\(|Duration|Executed Ipc A|Issue Slots Busy|Registers Per|Achieved Occ' \
        "$OUT/r/ncu$i.txt" | head -40
      # The report itself comes back beside logs.tgz when small enough (16 MiB per file).
      if [[ $(stat -c %s "$OUT/r/ncu$i.ncu-rep") -lt 15000000 ]]; then
        mv "$OUT/r/ncu$i.ncu-rep" "$OUT/"
      else
        rm -f "$OUT/r/ncu$i.ncu-rep"
      fi
    fi
  done
fi
el "done"
cat "$OUT/r/summary.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" r && rm -rf "$OUT/r"
