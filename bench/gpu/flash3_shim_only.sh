#!/bin/bash
# Builds only the flash3 bench shim (bench/gpu/flash3_shim.cpp + the backend + the instantiations
# of the head dims in F3_DIMS, default "64") from the source tree SRC (default .) into $B
# (default build_shim), in parallel. For quick A/Bs with flash3_tail_probe.py / flash3_vs_peers.py
# (a D 64-only shim builds in about half the time of flash3_gpu_run.sh's full build).
# Usage: [SRC=base] [B=build_base] [F3_DIMS="64 128"] [F3_TRACE=1] [F3_DEFS=-D...] bash bench/gpu/flash3_shim_only.sh
set -u
SRC=${SRC:-.}
B=$(realpath -m "${B:-build_shim}")
DIMS=${F3_DIMS:-64}
mkdir -p "$B"
ARCH="-gencode=arch=compute_90a,code=sm_90a"
DEFS="-DATTNKIT_WITH_CUDA=1"
for d in $DIMS; do DEFS="$DEFS -DATTNKIT_FLASH3_D$d=1"; done
# F3_TRACE=1: forward kernels record per-tile clock64 stamps (FwdArgs::trace; timing runs: off)
[ "${F3_TRACE:-0}" = 1 ] && DEFS="$DEFS -DATTNKIT_FLASH3_TRACE=1"
# F3_DEFS: more -D switches for this shim (an A/B build switch, for a two-shim A/B with
# flash3_knob_ab.py --shim; flash3_defs_ab.sh does both)
DEFS="$DEFS ${F3_DEFS:-}"
# -fno-gnu-unique: two shims in one process (flash3_tail_probe.py --lib-base) must not share
# the function-local statics of template functions (g++ emits them as STB_GNU_UNIQUE, bound
# process-wide even under RTLD_LOCAL): the launch's per-kernel "shared-memory opt-in done" cache
# in one shim then skipped the other's opt-in (cudaErrorInvalidValue at the launch, device call
# 2 of session 13).
NV="nvcc -std=c++20 -O3 $ARCH -I $SRC/include -I $SRC/src $DEFS -Xcompiler -fPIC,-fno-gnu-unique"
{
  for d in $DIMS; do
    for f in $SRC/src/backends/flash3/instantiations/*_d${d}_*.cu; do
      echo "$NV -c $f -o $B/$(basename $f .cu).o"
    done
  done
  echo "$NV -x cu -c $SRC/src/backends/flash3/backend.cpp -o $B/backend.o"
  echo "$NV -x cu -c $SRC/src/cuda/workspace.cpp -o $B/workspace.o"
  # (bwd_launch.cuh asks cuda::device_info for the SM count since session 26)
  echo "$NV -x cu -c $SRC/src/cuda/device_info.cpp -o $B/device_info.o"
  # (launch.cuh reads ATTNKIT_FLASH3_FWD_FP32_ROWSUM through core/env.hpp since session 40)
  echo "$NV -x cu -c $SRC/src/core/env.cpp -o $B/env.o"
  echo "$NV -x cu -c $SRC/bench/gpu/flash3_shim.cpp -o $B/shim.o"
} > "$B/jobs.txt"
t0=$(date +%s)
xargs -P 16 -I{} bash -c "{} 2>&1" < "$B/jobs.txt" > "$B/build.log" 2>&1
# (the backward has no D 256 instantiation: link the objects that exist)
nvcc $ARCH -shared -o "$B/libflash3_shim.so" "$B"/shim.o "$B"/backend.o "$B"/workspace.o "$B"/device_info.o "$B"/env.o \
  $(ls "$B"/fwd_*.o "$B"/bwd_*.o 2>/dev/null) >> "$B/build.log" 2>&1 || { echo "LINK shim FAILED ($SRC)"; tail -20 "$B/build.log"; exit 1; }
echo "shim $SRC -> $B/libflash3_shim.so: $(( $(date +%s) - t0 )) s"
