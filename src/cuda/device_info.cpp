#include "cuda/device_info.hpp"

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

#include "attnkit/error.hpp"
#include "cuda/cuda_check.hpp"

namespace attnkit::cuda {

int device_count() {
  // cudaGetDeviceCount fails with cudaErrorNoDevice / cudaErrorInsufficientDriver on machines
  // without a GPU; that is "no devices", not an error. Computed once: the count cannot change.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear it so a later cudaGetLastError() does not report it
      return 0;
    }
    return n;
  }();
  return count;
}

int current_device() {
  int d = 0;
  ATTNKIT_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

const DeviceInfo& device_info(int device) {
  const int n = device_count();
  if (device < 0 || device >= n)
    throw Error(ErrorCode::kInvalidArgument, "CUDA device " + std::to_string(device) +
                                                 " does not exist (" + std::to_string(n) +
                                                 " CUDA devices)");
  // One slot per device, filled once; entries are never moved, so references stay valid.
  static std::mutex mu;
  static std::vector<std::unique_ptr<DeviceInfo>> cache(static_cast<size_t>(n));
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[static_cast<size_t>(device)];
  if (!slot) {
    cudaDeviceProp prop{};
    ATTNKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    auto info = std::make_unique<DeviceInfo>();
    info->index = device;
    info->name = prop.name;
    info->arch = prop.major * 10 + prop.minor;
    info->sm_count = prop.multiProcessorCount;
    info->smem_per_block = prop.sharedMemPerBlock;
    info->smem_per_block_optin = prop.sharedMemPerBlockOptin;
    info->smem_per_sm = prop.sharedMemPerMultiprocessor;
    info->l2_bytes = static_cast<size_t>(prop.l2CacheSize);
    info->memory_bytes = prop.totalGlobalMem;
    info->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    info->regs_per_sm = prop.regsPerMultiprocessor;
    slot = std::move(info);
  }
  return *slot;
}

}  // namespace attnkit::cuda
