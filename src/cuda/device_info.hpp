// Per-device facts backends need for launch decisions, read once per device with
// cudaGetDeviceProperties and cached (the call costs ~1 ms; backends ask on every launch).
#pragma once

#include <cstddef>
#include <string>

namespace attnkit::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int arch = 0;                     // compute capability major * 10 + minor (90 = sm90)
  int sm_count = 0;                 // multiprocessors
  size_t smem_per_block = 0;        // bytes a block gets without opting in (48 KiB)
  size_t smem_per_block_optin = 0;  // bytes after cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
  size_t smem_per_sm = 0;           // bytes per multiprocessor
  size_t l2_bytes = 0;              // L2 cache size
  size_t memory_bytes = 0;          // total global memory
  int max_threads_per_sm = 0;
  int regs_per_sm = 0;
};

/// Number of CUDA devices; 0 (never an error) when there is no driver or no device, so a build
/// with CUDA runs fine on a machine without a GPU.
int device_count();

/// Cached facts of `device` (0 <= device < device_count()); throws Error(kInvalidArgument) for a
/// device that does not exist, Error(kCudaError) when the driver fails.
const DeviceInfo& device_info(int device);

/// The calling thread's current device.
int current_device();

}  // namespace attnkit::cuda
