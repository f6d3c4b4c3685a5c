// cpu_flash kernels for AVX-512 with AVX512-BF16, compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512dq -mavx512bf16 (CMakeLists.txt): the avx512 fp32 kernels plus VDPBF16PS gemm for bf16
// inputs. Register tile 4 rows x 4 vectors of 16 floats.
#define CPUF_NS avx512bf16
#define CPUF_NAME "avx512bf16"
#define CPUF_W 16
#define CPUF_ROWS 4
#define CPUF_VECS 4
#define CPUF_BF16 1
#include "backends/cpu_flash/microkernels.inc"

namespace attnkit::cpu_flash {
const KernelTable& kernels_avx512bf16() {
  return avx512bf16::table();
}
}  // namespace attnkit::cpu_flash
