// cpu_flash kernels for avx2, compiled with -mavx2 -mfma (CMakeLists.txt).
// Register tile 4 rows x 3 vectors of 8 floats.
#define CPUF_NS avx2
#define CPUF_NAME "avx2"
#define CPUF_W 8
#define CPUF_ROWS 4
#define CPUF_VECS 3
#include "backends/cpu_flash/microkernels.inc"

namespace attnkit::cpu_flash {
const KernelTable& kernels_avx2() {
  return avx2::table();
}
}  // namespace attnkit::cpu_flash
