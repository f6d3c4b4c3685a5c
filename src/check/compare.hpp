// Comparison of one output tensor with the reference: ||x - ref|| / ||ref|| and max |x - ref| over
// the logical elements, non-finite mismatches, and writes outside the view (padding changed).
#pragma once

#include <string>

#include "check/check.hpp"
#include "check/host_tensor.hpp"

namespace attnkit::check::detail {

/// out / dq / dk / dv. rel = ||x - ref||_2 / ||ref||_2 (= ||x - ref||_2 when ref is all zero);
/// pass iff every element is finite where ref is, rel <= rel_bound, max_abs <= abs_bound (when
/// abs_bound > 0) and nothing outside the view was written. Appends failures to `detail`.
Metric compare_values(const std::string& what, const HostTensor& got, const HostTensor& ref,
                      double rel_bound, double abs_bound, std::string& detail);

/// lse: -inf must be exactly -inf where the reference is -inf (and only there); finite entries
/// are compared by max abs error (rel is reported, not bounded).
Metric compare_lse(const HostTensor& got, const HostTensor& ref, double abs_bound,
                   std::string& detail);

/// Bitwise equality of two runs (deterministic backward). nonfinite = differing elements.
Metric compare_bitwise(const std::string& what, const HostTensor& a, const HostTensor& b,
                       std::string& detail);

}  // namespace attnkit::check::detail
