# Sourced by bench/gpu/scoremod_run.sh, flash_tanh_ab.sh and flash3_softcap_ab.sh: $OUT (created)
# with its summary.txt, say (a line to stdout and the summary), and cmake_tree DIR BACKENDS DIMS
# [CUDA_FLAGS [more cmake args]]: a Release, sm_90a, CUDA-on CMake tree without the CLI in DIR.
OUT=${OUT:-/tmp/attnkit_out}
mkdir -p "$OUT"
S="$OUT/summary.txt"
: > "$S"
say() { echo "$*" | tee -a "$S"; }
cmake_tree() {
  local dir=$1 backends=$2 dims=$3 flags=${4:-}
  shift 3
  [ $# -gt 0 ] && shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNKIT_CUDA=ON \
    -DATTNKIT_BACKENDS="$backends" -DATTNKIT_CUDA_ARCHS=90a -DATTNKIT_HEAD_DIMS="$dims" \
    -DATTNKIT_BUILD_CLI=OFF ${flags:+-DCMAKE_CUDA_FLAGS="$flags"} "$@"
}
