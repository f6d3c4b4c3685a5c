// Per-device caches of the flash3 launchers (host): the current device, clamped to the caches'
// size, and the dynamic shared-memory opt-in of a kernel, done once per (kernel, device).
#pragma once

#include <cuda_runtime.h>

#include <atomic>

#include "cuda/cuda_check.hpp"

namespace attnkit::flash3 {

inline constexpr int kMaxDevices = 64;

/// The current CUDA device (the backend has switched to p.device), clamped to the cache size.
inline int current_device() {
  int dev = 0;
  ATTNKIT_CUDA_CHECK(cudaGetDevice(&dev));
  return dev >= 0 && dev < kMaxDevices ? dev : 0;
}

/// cudaFuncSetAttribute(kKernel, MaxDynamicSharedMemorySize, bytes) on the current device unless
/// already done there (one flag set per kernel: kKernel is a template argument). Idempotent, so a
/// race between threads only repeats the call.
template <auto kKernel>
inline void opt_in_smem(int bytes) {
  static std::atomic<bool> done[kMaxDevices] = {};
  const int dev = current_device();
  if (done[dev].load(std::memory_order_acquire)) return;
  ATTNKIT_CUDA_CHECK(
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done[dev].store(true, std::memory_order_release);
}

}  // namespace attnkit::flash3
