// The few device operations the core, the check harness and the CLI need, behind one interface
// so that non-CUDA code never includes CUDA headers. The CPU implementation lives in
// device_runtime.cpp; the CUDA one in src/cuda/device_runtime_cuda.cpp (built with CUDA only).
#pragma once

#include <cstddef>
#include <vector>

#include "attnkit/backend_info.hpp"
#include "attnkit/tensor.hpp"

namespace attnkit {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual void* allocate(size_t bytes, Device d) = 0;
  virtual void release(void* p, Device d) = 0;
  virtual void copy_to_device(void* dst, const void* src, size_t bytes, Device d) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes, Device d) = 0;
  virtual void synchronize(Device d) = 0;
  virtual int arch(Device d) = 0;  // compute capability * 10; 0 on the CPU
  virtual std::vector<DeviceDescription> devices() = 0;
};

/// The runtime for d's type. Throws Error(kNotBuilt) for CUDA in a build without CUDA.
DeviceRuntime& device_runtime(DeviceType t);

#if defined(ATTNKIT_WITH_CUDA)
/// Defined in src/cuda/device_runtime_cuda.cpp.
DeviceRuntime& cuda_device_runtime();
#endif

/// RAII device (or host) buffer, used by the check harness and the CLI.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, Device d) : bytes_(bytes), device_(d) {
    if (bytes) ptr_ = device_runtime(d.type).allocate(bytes, d);
  }
  ~DeviceBuffer() {
    if (ptr_) device_runtime(device_.type).release(ptr_, device_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(device_, o.device_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  Device device_{};
};

}  // namespace attnkit
