// The D 256 RS backward as 2-CTA clusters with Q / dO multicast (session 30, written, not yet run:
// bwd_kernel_d256.cuh kCl; ATTNKIT_FLASH3_BWD_D256_CLUSTER=1), bf16, in a unit of its own.
#include "backends/flash3/bwd_launch_d256.cuh"

namespace attnkit::flash3::bwd {
void run_d256_cluster(const dim3& grid, const BwdArgs& a, cudaStream_t stream) {
  constexpr auto kKernel = &bwd_kernel_d256<true, false, true, false, true>;
  opt_in_smem<kKernel>(BwdTraits256::kSmemBytes);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  // An odd key-block count gets one more CTA: its keys are all >= Sk (masked, nothing stored),
  // but it keeps its partner's lockstep.
  cfg.gridDim = dim3((grid.x + 1) / 2 * 2, grid.y, grid.z);
  cfg.blockDim = dim3(BwdTraits256::kThreads);
  cfg.dynamicSmemBytes = BwdTraits256::kSmemBytes;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  ATTNKIT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kKernel, a));
  ATTNKIT_CUDA_CHECK_LAUNCH();
}
}  // namespace attnkit::flash3::bwd
