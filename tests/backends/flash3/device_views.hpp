// Test glue shared by flash3's CUDA tests that call the public API on raw device memory: a
// cudaMalloc'd buffer freed at scope end, and a dense [B, S, H, D] view of it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "attnkit/attention.hpp"

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

}  // namespace attnkit::testing
