// RAII: makes `device` current for the scope and restores the previous current device after.
// Every CUDA-layer call that allocates or launches for a Device that may not be current uses it,
// so callers never see their current device change.
#pragma once

#include <cuda_runtime.h>

#include "cuda/cuda_check.hpp"

namespace attnkit::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    ATTNKIT_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) {
      ATTNKIT_CUDA_CHECK(cudaSetDevice(device));
      switched_ = true;
    }
  }
  ~DeviceGuard() {
    // Restoring cannot throw from a destructor; a failure here would have failed the set above.
    if (switched_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace attnkit::cuda
