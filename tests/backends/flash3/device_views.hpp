// Test glue shared by flash3's CUDA tests that call the public API on raw device memory: a
// cudaMalloc'd buffer freed at scope end, a dense [B, S, H, D] view of it, and whether device 0
// is an sm90 and flash3 was built with a head dim.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "attnkit/attention.hpp"
#include "attnkit/backend_info.hpp"

namespace attnkit::testing {

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { cudaMalloc(&p, n); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

/// Contiguous [B, S, H, D] tensor of dtype dt at `data` on cuda:0.
inline TensorView bshd_view(void* data, DType dt, int64_t b, int64_t s, int64_t h, int64_t d) {
  TensorView t;
  t.data = data;
  t.dtype = dt;
  t.device = Device::cuda(0);
  t.rank = 4;
  t.shape = {b, s, h, d};
  t.stride = {s * h * d, h * d, d, 1};
  return t;
}

/// Device 0 is an sm90 (flash3's sm_90a kernels run there).
inline bool device_is_sm90() {
  cudaDeviceProp p{};
  return cudaGetDeviceProperties(&p, 0) == cudaSuccess && p.major == 9 && p.minor == 0;
}

/// flash3 is built, with head dim d among its capabilities.
inline bool flash3_built_with(int d) {
  for (const auto& b : list_backends())
    if (b.name == "flash3")
      return b.built && std::find(b.caps.head_dims.begin(), b.caps.head_dims.end(), d) !=
                            b.caps.head_dims.end();
  return false;
}

}  // namespace attnkit::testing
