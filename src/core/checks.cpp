#include "core/checks.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "attnkit/error.hpp"
#include "core/device_runtime.hpp"
#include "core/dtype_convert.hpp"

namespace attnkit {

int64_t count_nonfinite(const TensorView& t) {
  if (!t.defined() || !is_float(t.dtype) || t.numel() == 0) return 0;
  int64_t span = 1;  // elements from data to the last one, inclusive
  for (int i = 0; i < t.rank; ++i)
    span += (t.shape[i] - 1) * t.stride[i];
  const size_t bytes = static_cast<size_t>(span) * dtype_size(t.dtype);
  std::vector<unsigned char> host;
  const void* base = t.data;
  if (t.device.type != DeviceType::cpu) {
    host.resize(bytes);
    auto& rt = device_runtime(t.device.type);
    rt.synchronize(t.device);
    rt.copy_to_host(host.data(), t.data, bytes, t.device);
    base = host.data();
  }
  int64_t bad = 0;
  int64_t idx[kMaxRank] = {0, 0, 0, 0};
  const int64_t n = t.numel();
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int i = 0; i < t.rank; ++i)
      off += idx[i] * t.stride[i];
    if (!std::isfinite(load_as_double(base, off, t.dtype))) ++bad;
    for (int i = t.rank - 1; i >= 0; --i) {
      if (++idx[i] < t.shape[i]) break;
      idx[i] = 0;
    }
  }
  return bad;
}

void require_finite(const TensorView& t, const char* name, const char* when) {
  const int64_t bad = count_nonfinite(t);
  if (bad > 0)
    throw Error(ErrorCode::kNumericalError, std::string("ATTNKIT_CHECKS: ") + name + " has " +
                                                std::to_string(bad) + " NaN/Inf elements " + when +
                                                " (shape " + t.shape_str() + ")");
}

}  // namespace attnkit
