#include "core/device_runtime.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "attnkit/error.hpp"

namespace attnkit {
namespace {

class CpuRuntime final : public DeviceRuntime {
 public:
  void* allocate(size_t bytes, Device) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
      throw Error(ErrorCode::kTooLarge,
                  "host allocation of " + std::to_string(bytes) + " bytes failed");
    return p;
  }
  void release(void* p, Device) override { std::free(p); }
  void copy_to_device(void* dst, const void* src, size_t n, Device) override {
    std::memcpy(dst, src, n);
  }
  void copy_to_host(void* dst, const void* src, size_t n, Device) override {
    std::memcpy(dst, src, n);
  }
  void synchronize(Device) override {}
  int arch(Device) override { return 0; }
  std::vector<DeviceDescription> devices() override {
    DeviceDescription d;
    d.device = Device::cpu();
    d.name = "cpu";
    return {d};
  }
};

}  // namespace

DeviceRuntime& device_runtime(DeviceType t) {
  static CpuRuntime cpu;
  if (t == DeviceType::cpu) return cpu;
#if defined(ATTNKIT_WITH_CUDA)
  return cuda_device_runtime();
#else
  throw Error(ErrorCode::kNotBuilt, "CUDA device requested, but attnkit was built without CUDA");
#endif
}

}  // namespace attnkit
