// cpu_flash kernels for portable, compiled with (no ISA flags: x86-64 baseline SSE2, or the
// target's default) (CMakeLists.txt). Register tile 4 rows x 2 vectors of 4 floats.
#define CPUF_NS portable
#define CPUF_NAME "portable"
#define CPUF_W 4
#define CPUF_ROWS 4
#define CPUF_VECS 2
#include "backends/cpu_flash/microkernels.inc"

namespace attnkit::cpu_flash {
const KernelTable& kernels_portable() {
  return portable::table();
}
}  // namespace attnkit::cpu_flash
