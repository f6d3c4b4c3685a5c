// The CUDA DeviceRuntime (src/core/device_runtime.hpp): memory, copies and device facts for the
// core, the check harness and the CLI. Copies here are synchronous (these callers have no stream);
// backends never use this path — they work on Params::stream.
#include <cuda_runtime.h>

#include "attnkit/error.hpp"
#include "core/device_runtime.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/device_info.hpp"

namespace attnkit {
namespace {

void require_cuda_device(Device d) {
  if (d.type != DeviceType::cuda)
    throw Error(ErrorCode::kInternal, "CUDA runtime called for device " + d.str());
  const int n = cuda::device_count();
  if (d.index < 0 || d.index >= n)
    throw Error(ErrorCode::kInvalidArgument,
                "device " + d.str() + " does not exist (" + std::to_string(n) + " CUDA devices)");
}

class CudaRuntime final : public DeviceRuntime {
 public:
  void* allocate(size_t bytes, Device d) override {
    require_cuda_device(d);
    if (bytes == 0) return nullptr;
    cuda::DeviceGuard guard(d.index);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw Error(ErrorCode::kTooLarge, "cudaMalloc of " + std::to_string(bytes) + " bytes on " +
                                            d.str() + " failed: out of memory");
    }
    ATTNKIT_CUDA_CHECK(e);
    return p;
  }
  void release(void* p, Device d) override {
    if (!p) return;
    cuda::DeviceGuard guard(d.index);
    ATTNKIT_CUDA_CHECK(cudaFree(p));
  }
  void copy_to_device(void* dst, const void* src, size_t bytes, Device d) override {
    if (bytes == 0) return;
    require_cuda_device(d);
    cuda::DeviceGuard guard(d.index);
    ATTNKIT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, Device d) override {
    if (bytes == 0) return;
    require_cuda_device(d);
    cuda::DeviceGuard guard(d.index);
    ATTNKIT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void synchronize(Device d) override {
    require_cuda_device(d);
    cuda::DeviceGuard guard(d.index);
    ATTNKIT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  int arch(Device d) override {
    if (d.type != DeviceType::cuda) return 0;
    require_cuda_device(d);
    return cuda::device_info(d.index).arch;
  }
  std::vector<DeviceDescription> devices() override {
    std::vector<DeviceDescription> out;
    const int n = cuda::device_count();  // 0 without a GPU: nothing is listed, nothing throws
    for (int i = 0; i < n; ++i) {
      const cuda::DeviceInfo& info = cuda::device_info(i);
      DeviceDescription dd;
      dd.device = Device::cuda(i);
      dd.name = info.name;
      dd.arch = info.arch;
      dd.sm_count = info.sm_count;
      dd.memory_bytes = static_cast<int64_t>(info.memory_bytes);
      out.push_back(std::move(dd));
    }
    return out;
  }
};

}  // namespace

DeviceRuntime& cuda_device_runtime() {
  static CudaRuntime runtime;
  return runtime;
}

}  // namespace attnkit
