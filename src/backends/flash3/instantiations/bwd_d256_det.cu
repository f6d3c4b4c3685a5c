// The D 256 deterministic backward (session 30, first run in session 31: bwd_kernel_d256.cuh kDet),
// bf16 and f16, in a unit of its own so that its kernels compile beside the dense ones.
#include "backends/flash3/bwd_launch_d256.cuh"

namespace attnkit::flash3::bwd {
template <bool BF16>
void run_d256_det(const dim3& grid, const BwdArgs& a, cudaStream_t stream) {
  run_kernel_d256<&bwd_kernel_d256<BF16, false, true, false, true>>(grid, a, stream);
}
template void run_d256_det<true>(const dim3& grid, const BwdArgs& a, cudaStream_t stream);
template void run_d256_det<false>(const dim3& grid, const BwdArgs& a, cudaStream_t stream);
}  // namespace attnkit::flash3::bwd
