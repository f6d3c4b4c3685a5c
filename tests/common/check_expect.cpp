#include "common/check_expect.hpp"

#include <sstream>

namespace attnkit::testing {

std::string describe_metrics(const check::Report& r) {
  std::ostringstream os;
  os.precision(3);
  for (size_t i = 0; i < r.metrics.size(); ++i) {
    const check::Metric& m = r.metrics[i];
    os << (i ? " | " : "") << m.what << " rel " << m.rel << " max " << m.max_abs;
    if (m.nonfinite) os << " nonfinite " << m.nonfinite;
    if (!m.pass) os << " FAIL";
  }
  return os.str();
}

}  // namespace attnkit::testing
