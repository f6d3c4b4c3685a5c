#include "common/cuda_skip.hpp"

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
      *why = e.code() == ErrorCode::kNotBuilt ? std::string("attnkit built without CUDA: ")
                                              : std::string("CUDA runtime error: ");
      *why += e.what();
    }
    return false;
  }
}

}  // namespace attnkit::testing
