#include "check/compare.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

namespace attnkit::check::detail {
namespace {

void note(std::string& detail, const std::string& s) {
  if (!detail.empty()) detail += "; ";
  detail += s;
}

std::string fmt(double x) {
  std::ostringstream os;
  os.precision(3);
  os << x;
  return os.str();
}

void check_padding(const std::string& what, const HostTensor& got, Metric& m, std::string& detail) {
  if (const int64_t changed = got.changed_padding_bytes()) {
    m.pass = false;
    note(detail, what + ": " + std::to_string(changed) + " bytes written outside the view");
  }
}

}  // namespace

Metric compare_values(const std::string& what, const HostTensor& got, const HostTensor& ref,
                      double rel_bound, double abs_bound, std::string& detail) {
  Metric m;
  m.what = what;
  const std::vector<double> x = got.values(), r = ref.values();
  double diff2 = 0, ref2 = 0;
  int64_t first_bad = -1;
  for (size_t e = 0; e < x.size(); ++e) {
    if (std::isfinite(x[e]) != std::isfinite(r[e])) {
      if (m.nonfinite++ == 0) first_bad = static_cast<int64_t>(e);
      continue;
    }
    if (!std::isfinite(r[e])) continue;  // both non-finite: a reference with Inf is not compared
    const double d = x[e] - r[e];
    diff2 += d * d;
    ref2 += r[e] * r[e];
    m.max_abs = std::max(m.max_abs, std::abs(d));
  }
  m.rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (m.nonfinite) {
    m.pass = false;
    note(detail, what + ": " + std::to_string(m.nonfinite) + " non-finite mismatches (first at " +
                     "element " + std::to_string(first_bad) + ": " + fmt(x[first_bad]) +
                     " vs reference " + fmt(r[first_bad]) + ")");
  }
  if (!(m.rel <= rel_bound)) {
    m.pass = false;
    note(detail, what + ": rel error " + fmt(m.rel) + " > " + fmt(rel_bound));
  }
  if (abs_bound > 0 && !(m.max_abs <= abs_bound)) {
    m.pass = false;
    note(detail, what + ": max abs error " + fmt(m.max_abs) + " > " + fmt(abs_bound));
  }
  check_padding(what, got, m, detail);
  return m;
}

Metric compare_lse(const HostTensor& got, const HostTensor& ref, double abs_bound,
                   std::string& detail) {
  Metric m;
  m.what = "lse";
  const std::vector<double> x = got.values(), r = ref.values();
  double diff2 = 0, ref2 = 0;
  int64_t first_bad = -1;
  for (size_t e = 0; e < x.size(); ++e) {
    const bool ref_empty = r[e] == -INFINITY;
    const bool ok_kind = ref_empty ? x[e] == -INFINITY : std::isfinite(x[e]);
    if (!ok_kind) {
      if (m.nonfinite++ == 0) first_bad = static_cast<int64_t>(e);
      continue;
    }
    if (ref_empty) continue;
    const double d = x[e] - r[e];
    diff2 += d * d;
    ref2 += r[e] * r[e];
    m.max_abs = std::max(m.max_abs, std::abs(d));
  }
  m.rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (m.nonfinite) {
    m.pass = false;
    note(detail, "lse: " + std::to_string(m.nonfinite) + " entries where -inf/finite differ " +
                     "(first at element " + std::to_string(first_bad) + ": " + fmt(x[first_bad]) +
                     " vs reference " + fmt(r[first_bad]) + ")");
  }
  if (!(m.max_abs <= abs_bound)) {
    m.pass = false;
    note(detail, "lse: max abs error " + fmt(m.max_abs) + " > " + fmt(abs_bound));
  }
  check_padding("lse", got, m, detail);
  return m;
}

Metric compare_bitwise(const std::string& what, const HostTensor& a, const HostTensor& b,
                       std::string& detail) {
  Metric m;
  m.what = what;
  const int sz = dtype_size(a.dtype);
  for (int64_t off : a.offsets())
    if (std::memcmp(a.bytes.data() + off * sz, b.bytes.data() + off * sz, sz) != 0) ++m.nonfinite;
  if (m.nonfinite) {
    m.pass = false;
    note(detail, what + ": " + std::to_string(m.nonfinite) +
                     " elements differ between two deterministic runs");
  }
  return m;
}

}  // namespace attnkit::check::detail
