// One cuDNN handle per (thread, device): cuDNN handles are not thread-safe, and a handle is bound
// to the device current at its creation. The caller's stream is set on it for every call.
#include <cuda_runtime.h>

#include <map>

#include "attnkit/error.hpp"
#include "backends/cudnn/handle.hpp"
#include "cuda/cuda_check.hpp"

namespace attnkit::cudnn {
namespace {

struct ThreadHandles {
  std::map<int, cudnnHandle_t> by_device;
  ~ThreadHandles() {
    for (auto& [dev, h] : by_device)
      cudnnDestroy(h);  // best effort at thread exit
  }
};

}  // namespace

cudnnHandle_t thread_handle(int device) {
  thread_local ThreadHandles handles;
  auto it = handles.by_device.find(device);
  if (it != handles.by_device.end()) return it->second;
  int prev = 0;
  ATTNKIT_CUDA_CHECK(cudaGetDevice(&prev));
  if (prev != device) ATTNKIT_CUDA_CHECK(cudaSetDevice(device));
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t st = cudnnCreate(&h);
  if (prev != device) ATTNKIT_CUDA_CHECK(cudaSetDevice(prev));
  if (st != CUDNN_STATUS_SUCCESS)
    throw Error(ErrorCode::kCudaError,
                std::string("cudnnCreate failed: ") + cudnnGetErrorString(st));
  handles.by_device.emplace(device, h);
  return h;
}

}  // namespace attnkit::cudnn
