// The D = 256 backward (session 26, bwd_kernel_d256.cuh), f16: an explicit specialization of
// run_backward (bwd_launch.hpp), so that the D 64 / 128 launcher's variants are not instantiated
// at D 256.
#include "backends/flash3/bwd_launch_d256.cuh"

namespace attnkit::flash3 {
template <>
void run_backward<256, false>(const Params& p) {
  if (p.varlen)
    bwd::launch_backward_d256<false, true>(p);  // (bwd_d256_varlen_f16.cu)
  else
    bwd::launch_backward_d256<false>(p);
}
}  // namespace attnkit::flash3
