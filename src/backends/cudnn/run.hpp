// Forward and backward execution of the cudnn backend (Params already validated and supported).
#pragma once

#include "core/params.hpp"

namespace attnkit::cudnn {

/// Writes p.out (and p.lse when set). Throws Error(kUnsupported) when cuDNN rejects the graph,
/// Error(kCudaError) when execution fails.
void run_forward(const Params& p);
/// Writes p.dq, p.dk, p.dv from (p.dout, p.q, p.k, p.v, p.out, p.lse).
void run_backward(const Params& p);

}  // namespace attnkit::cudnn
