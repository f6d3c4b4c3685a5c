// The configuration key of one cuDNN graph: everything that shapes the graph (never data
// pointers, never the scale, which is a pass-by-value input). Two calls with equal keys share one
// built execution plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cudnn/support.hpp"
#include "core/params.hpp"

namespace attnkit::cudnn {

struct PlanKey {
  std::vector<int64_t> v;  // flattened fields, see make_plan_key()
  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const noexcept;
};

/// Key of the forward (p.is_backward = false) or backward graph for `p` mapped as `m`.
/// `with_stats`: the forward writes cuDNN's stats (lse requested, or needed for row fix-ups).
PlanKey make_plan_key(const Params& p, const Mapping& m, bool with_stats);

/// Human-readable form for errors and logs.
std::string describe(const PlanKey& k);

}  // namespace attnkit::cudnn
