#!/bin/bash
# Is a flash3 backward kernel change free where it should be? Builds the standalone A/B tool
# (bench/gpu/flash3_bwd_ab.cu) twice — from a base source tree ($BASE: include/, src/ and
# bench/gpu/flash3_bwd_ab.cu of, e.g., main) and from this tree — then runs both binaries as
# separate processes, ABBA over ROUNDS, through flash3_bwd_modes.sh (SKIP_BUILD=1), and prints its
# per-config table (base first; the ratio column is tree / base).
# Why (session 49): a runtime CTA-order decode with the same REG / STACK slowed every D 128
# backward kernel 7-9 %, which the in-binary A/B (order 0 against 4) could not see.
# Prepare the base here (it travels to the device as an untracked folder):
#   mkdir -p s50/base && git archive main include src bench/gpu/flash3_bwd_ab.cu | tar -x -C s50/base
# Usage: BASE=s50/base OUT=dir [CFGS="4096,128,1 ..."] [ROUNDS=6 (0: build only)] [REPS=80]
#        [VARIANTS=default] [SKIP_BUILD=1]
#        bash bench/gpu/flash3_bwd_base_vs_tree.sh
set -u
BASE=${BASE:?BASE (a source tree with include/, src/, bench/gpu/flash3_bwd_ab.cu)}
OUT=${OUT:?OUT}
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p "$OUT" /tmp/f3modes
t0=$(date +%s)
build() {  # name srcdir: the TUs flash3_bwd_modes.sh compiles, all in parallel, then one link
  local name=$1 src=$2 tu
  for tu in bench/gpu/flash3_bwd_ab.cu src/backends/flash3/instantiations/bwd_d64_bf16.cu \
    src/backends/flash3/instantiations/bwd_d128_bf16.cu \
    src/backends/flash3/instantiations/bwd_d256_bf16.cu \
    src/backends/flash3/instantiations/bwd_d256_varlen_bf16.cu \
    src/backends/flash3/instantiations/bwd_d256_det.cu; do
    (cd "$src" && nvcc -std=c++20 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I include \
      -I src -c $tu -o /tmp/f3modes/$name-$(basename $tu .cu).o \
      > /tmp/f3modes/$name-$(basename $tu .cu).log 2>&1) &
  done
  (cd "$src" && nvcc -std=c++20 -O2 -I include -I src -c src/cuda/workspace.cpp \
    -o /tmp/f3modes/$name-workspace.o > /tmp/f3modes/$name-workspace.log 2>&1) &
  (cd "$src" && nvcc -std=c++20 -O2 -I include -I src -x cu -c src/cuda/device_info.cpp \
    -o /tmp/f3modes/$name-device_info.o > /tmp/f3modes/$name-device_info.log 2>&1) &
}
# SKIP_BUILD=1: reuse /tmp/f3modes/ab-{base,tree} (e.g. built with ROUNDS=0 while something
# else built, so that no build runs beside the timed processes).
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  rm -f /tmp/f3modes/base-*.o /tmp/f3modes/tree-*.o
  build base "$BASE"
  build tree .
  wait
  for n in base tree; do
    nvcc -gencode=arch=compute_90a,code=sm_90a /tmp/f3modes/$n-*.o -o /tmp/f3modes/ab-$n \
      > /tmp/f3modes/$n-link.log 2>&1 || { echo "build $n failed"; tail -n 20 /tmp/f3modes/$n-*.log; exit 1; }
  done
  echo "builds: $(($(date +%s) - t0)) s"
fi
[ "${ROUNDS:-6}" = 0 ] && exit 0
OUT=$OUT SKIP_BUILD=1 FLAVOURS="base:|tree:" VARIANTS=${VARIANTS:-default} ROUNDS=${ROUNDS:-6} \
  REPS=${REPS:-80} CFGS="${CFGS:-1024,128,1 4096,128,1 16384,128,1 4096,128,0}" \
  bash "$(dirname "$0")/flash3_bwd_modes.sh" > /dev/null 2>&1
cat "$OUT/modes.txt"
