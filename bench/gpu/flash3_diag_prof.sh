#!/bin/bash
# Session 21: ncu (warp-state sampling per SASS line) of the diagonal-half build against the
# plain kernel and the diag build without the half (Tuning::diag_half 1 / 0 / 2), one launch each,
# after the standalone build (no tests). Usage: OUT=... bash bench/gpu/flash3_diag_prof.sh [shapes]
set -u
OUT=${OUT:-/tmp/flash3_out}
mkdir -p "$OUT"
F3_TEST_FILTER='*Diag*' F3_SANITIZE=0 F3_SASS_DUMP=0 F3_BENCH=0 bash bench/gpu/flash3_gpu_run.sh \
  > $OUT/gpu_run.log 2>&1
grep -E "^build:|tests:" $OUT/gpu_run.log
F3_NCU_COUNT=${F3_NCU_COUNT:-6} bash bench/gpu/flash3_prof_run.sh "${1:-64:1024:1}" nodiag,diagbuild
