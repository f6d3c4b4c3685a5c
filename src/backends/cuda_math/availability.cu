// Host utilities: whether this binary holds cuda_math kernels runnable on a device (the build's
// CMAKE_CUDA_ARCHITECTURES may not cover it, e.g. an sm75 card in an "80;90a" build).
#include <cuda_runtime.h>

#include <string>

#include "backends/cuda_math/cuda_math.hpp"
#include "backends/cuda_math/launch.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/device_info.hpp"

namespace attnkit::cuda_math {
namespace {
__global__ void probe_kernel() {}
}  // namespace

bool kernels_available(int device, std::string* why) {
  if (device < 0 || device >= cuda::device_count()) {
    if (why) *why = "CUDA device " + std::to_string(device) + " not present";
    return false;
  }
  cuda::DeviceGuard guard(device);
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, probe_kernel);
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  if (why)
    *why = "no kernel image for sm" + std::to_string(cuda::device_info(device).arch) +
           " in this build (" + cudaGetErrorString(e) + ")";
  return false;
}

void set_workspace_budget_for_testing(size_t bytes) {
  g_budget_override.store(bytes);
}

}  // namespace attnkit::cuda_math
