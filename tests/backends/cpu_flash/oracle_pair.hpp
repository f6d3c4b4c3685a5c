// A small two-backend runner for cpu_flash's tests: builds one check::Case's inputs (N(0,1),
// rounded to the dtype; both backends see the same bits), runs forward (and backward) through the
// public API on a named backend, and returns every output as doubles in logical order.
// Used until / beside check::run_case; it also gives the bit-exact comparisons the thread-count
// and determinism tests need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnkit/attention.hpp"
#include "check/check.hpp"

namespace attnkit::testing {

struct Outputs {
  std::vector<double> out, lse, dq, dk, dv;
};

struct PairRunner {
  explicit PairRunner(const check::Case& c, uint64_t seed = 1);
  ~PairRunner();
  PairRunner(const PairRunner&) = delete;
  PairRunner& operator=(const PairRunner&) = delete;

  /// Forward on `backend` (out poisoned with NaN first). With c.backward: then backward on
  /// `backend` from the *oracle's* out and lse (so the comparison isolates the backward).
  Outputs run(const std::string& backend);

  struct Impl;
  Impl* impl;
};

struct Diff {
  double rel = 0, max_abs = 0;
  int64_t mismatched_nonfinite = 0;  // NaN anywhere, or Inf in one but not the other
};
Diff compare(const std::vector<double>& got, const std::vector<double>& ref);

}  // namespace attnkit::testing
