#!/usr/bin/env bash
# flash3_one_kernel.sh "D, BF16, BN, WGs, VS, kVar, CL, RS" [OUT.o] [-- extra nvcc flags...]
# Compiles ONE flash3 forward kernel (fwd_kernel<...> of src/backends/flash3/kernel.cuh,
# explicitly instantiated in a throw-away translation unit) for sm_90a and prints its turn
# loops (bench/gpu/sass_turn_loop.py) and ptxas's register / spill line. A few seconds a
# compile, against ~1 min for an instantiation TU's 40-50 kernels: for iterating on the SASS of
# one kernel (session 41: the D 256 Q K^T descriptor experiment). The launch slots' template
# arguments are in launch.cuh (e.g. D 256 slot 38: "256, true, 0, 2, 2, 65585, 1, 0"; kVar is
# the sum of mainloop.cuh's kVar* bits). Needs nvcc; cuobjdump / nvdisasm on PATH for the loops
# (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm). Extra flags after "--" (e.g.
# -DATTNKIT_FLASH3_FWD_<SWITCH>=1) reach nvcc.
#   tools/flash3_one_kernel.sh "256, true, 0, 2, 2, 65585, 1, 0" /tmp/k38.o
# Backward (session 42): "bwd D, BF16, kDecoupled, BM, kDqFirst, kStat, ..." (bwd_kernel.cuh's
# bwd_kernel template arguments; the D 128 default is "bwd 128, true, false, 80, true, 3, false,
# false, true, false" (80-row blocks since session 44; causal below 8k keys: 64 for the 4th), the
# D 64 one "bwd 64, true, false, 128, true, 2, false, false, false, true") prints the instruction
# count and the instructions between consecutive HGMMAs.
set -eu
[ $# -ge 1 ] || { sed -n 2,12p "$0" >&2; exit 2; }
args=$1
shift
out=/tmp/flash3_one_kernel.o
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  out=$1
  shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
bwd=0
case $args in bwd\ *) bwd=1 args=${args#bwd } ;; esac
d=${args%%,*}
tu=$(mktemp --suffix=.cu)
trap 'rm -f "$tu"' EXIT
if [ $bwd = 1 ]; then
  cat > "$tu" <<EOF
#include "backends/flash3/bwd_kernel.cuh"
namespace attnkit::flash3::bwd {
template __global__ void bwd_kernel<$args>(const __grid_constant__ BwdArgs);
}  // namespace attnkit::flash3::bwd
EOF
else
  cat > "$tu" <<EOF
#include "backends/flash3/kernel.cuh"
namespace attnkit::flash3 {
template __global__ void fwd_kernel<$args>(const __grid_constant__ FwdArgs);
}  // namespace attnkit::flash3
EOF
fi
nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -DATTNKIT_WITH_CUDA=1 \
  "-DATTNKIT_FLASH3_D${d// /}=1" -Xcompiler -fPIC -Xptxas -v -I "$root/include" -I "$root/src" \
  "$@" -c "$tu" -o "$out" 2>&1 | grep -E "error|registers|spill" | grep -v "^ptxas info    : Compiling" || true
[ -s "$out" ] || { echo "compile failed" >&2; exit 1; }
# (the object holds this one kernel)
if [ $bwd = 1 ]; then
  cuobjdump -sass "$out" | python3 -c '
import re, sys
ins = [l for l in sys.stdin if re.match(r"\s+/\*[0-9a-f]{4}\*/", l)]
at = [i for i, l in enumerate(ins) if "HGMMA" in l]
print(f"{len(ins)} instructions, {len(at)} HGMMA; instructions between consecutive HGMMAs:",
      [b - a - 1 for a, b in zip(at, at[1:])])'
else
  cuobjdump -sass "$out" | c++filt | python3 "$root/bench/gpu/sass_turn_loop.py" fwd_kernel | sed -n 1,4p
fi
echo "object: $out"
