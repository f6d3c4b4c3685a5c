#!/usr/bin/env bash
# Per-instruction stall view of one flash kernel against FA-2's (torch SDPA FLASH_ATTENTION) on
# one shape, on the lent GPU (bench/notes/flash.md, session 8). Builds the flash backend for the
# listed head dims only (no tests), then one ncu run per side with source counters, and writes
# under OUT: <side>.details.txt (ncu details page), <side>.stalls.txt (ncu_stall_summary.py: top
# instructions by stall samples and their reasons), packed with the source CSVs into ncu_src.tgz.
#
#   OUT=... NCU_DIMS="256" NCU_SHAPE="--s 4096 --d 256" NCU_PASS=bwd bash bench/gpu/flash_ncu_src.sh
# NCU_PASS: fwd or bwd (the kernel regex follows it); NCU_SHAPE: flash_ncu.py arguments.
set -uo pipefail
OUT=${OUT:-/tmp/flash_ncu}
mkdir -p "$OUT/ncu"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
t0=$(date +%s)
DIMS=${NCU_DIMS:-256}
PASS=${NCU_PASS:-bwd}
SHAPE=${NCU_SHAPE:---s 4096 --d 256}
cmake -S . -B build-ncu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNKIT_CUDA=ON \
  -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="$DIMS" -DATTNKIT_BACKENDS="math;flash" \
  -DATTNKIT_BUILD_TESTS=OFF -DATTNKIT_BUILD_CLI=OFF >"$OUT/ncu/build.log" 2>&1 &&
  cmake --build build-ncu -j 16 --target attnkit_c >>"$OUT/ncu/build.log" 2>&1 ||
  { echo "build failed"; tail -30 "$OUT/ncu/build.log"; exit 1; }
echo "build: $(($(date +%s) - t0)) s"
if [[ $PASS == bwd ]]; then
  ours='regex:bwd_fused_kernel'
  theirs='regex:flash_bwd_dq_dk_dv'
else
  ours='regex:fwd_kernel'
  theirs='regex:flash_fwd_kernel'
fi
for side in ours fa2; do
  k=$ours
  [[ $side == fa2 ]] && k=$theirs
  # shellcheck disable=SC2086
  timeout "${T_NCU:-120}" ncu --profile-from-start off --clock-control none -k "$k" -c 1 \
    --import-source yes --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis -f -o "$OUT/ncu/$side" \
    python3 bench/gpu/flash_ncu.py --lib build-ncu/libattnkit_c.so $SHAPE --passes "$PASS" \
    >"$OUT/ncu/$side.log" 2>&1
  echo "ncu $side rc=$?"
  ncu --import "$OUT/ncu/$side.ncu-rep" --page details >"$OUT/ncu/$side.details.txt" 2>&1
  ncu --import "$OUT/ncu/$side.ncu-rep" --page source --csv --print-source sass \
    >"$OUT/ncu/$side.src.csv" 2>&1
  python3 bench/gpu/ncu_stall_summary.py <"$OUT/ncu/$side.src.csv" >"$OUT/ncu/$side.stalls.txt" 2>&1
  grep -E "^  [a-zA-Z_].*\(|Duration|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A" \
    "$OUT/ncu/$side.details.txt" | head -12
  head -30 "$OUT/ncu/$side.stalls.txt"
done
rm -f "$OUT"/ncu/*.ncu-rep.tmp
(cd "$OUT" && tar czf ncu_src.tgz --exclude "*.ncu-rep" ncu && rm -rf ncu)
echo "total $(($(date +%s) - t0)) s"
