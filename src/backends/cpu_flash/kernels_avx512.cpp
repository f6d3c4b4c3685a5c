// cpu_flash kernels for avx512, compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq
// (CMakeLists.txt). Register tile 4 rows x 4 vectors of 16 floats.
#define CPUF_NS avx512
#define CPUF_NAME "avx512"
#define CPUF_W 16
#define CPUF_ROWS 4
#define CPUF_VECS 4
#include "backends/cpu_flash/microkernels.inc"

namespace attnkit::cpu_flash {
const KernelTable& kernels_avx512() {
  return avx512::table();
}
}  // namespace attnkit::cpu_flash
