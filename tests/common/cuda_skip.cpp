#include "common/cuda_skip.hpp"

#include "attnkit/backend_info.hpp"
#include "attnkit/error.hpp"
#include "core/device_runtime.hpp"

namespace attnkit::testing {

bool cuda_available(std::string* why) {
  try {
    const auto devices = device_runtime(DeviceType::cuda).devices();
    if (devices.empty()) {
      if (why) *why = "attnkit is built with CUDA, but no CUDA device is visible";
      return false;
    }
    return true;
  } catch (const Error& e) {
    if (why) {
      // kNotBuilt's message already says "built without CUDA".
      *why = e.code() == ErrorCode::kNotBuilt ? std::string() : std::string("CUDA runtime error: ");
      *why += e.what();
    }
    return false;
  }
}

bool backend_built(const std::string& name) {
  for (const auto& d : list_backends())
    if (d.name == name) return d.built;
  return false;
}

}  // namespace attnkit::testing
