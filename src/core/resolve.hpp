// Validation and resolution of one call into Params (DESIGN.md §1: front end → validate →
// resolve → select → backend). Every check happens here, before any backend runs; an invalid call
// throws Error(kInvalidArgument) naming the argument, the expectation and the actual value, and
// nothing is written.
#pragma once

#include <cstdint>
#include <vector>

#include "attnkit/attention.hpp"
#include "core/params.hpp"

namespace attnkit {

/// Params plus what it points into: host copies of cu_seqlens made during validation.
struct ResolvedCall {
  Params params;
  std::vector<int32_t> cu_seqlens_q_host, cu_seqlens_k_host;
  ResolvedCall() = default;
  ResolvedCall(const ResolvedCall&) = delete;  // params points into the vectors
  ResolvedCall& operator=(const ResolvedCall&) = delete;
};

/// Validates a forward call and fills `rc.params`.
void resolve_forward(const ForwardArgs& args, const Options& opts, ResolvedCall& rc);
/// Validates a backward call and fills `rc.params` (is_backward = true).
void resolve_backward(const BackwardArgs& args, const Options& opts, ResolvedCall& rc);

/// Thread count for CPU backends: set_num_threads() > env ATTNKIT_NUM_THREADS > all cores.
int resolved_num_threads();

}  // namespace attnkit
