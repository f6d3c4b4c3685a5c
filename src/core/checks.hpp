// ATTNKIT_CHECKS=1: NaN/Inf scans of inputs before and outputs after a call. Debug aid: CUDA
// tensors are copied to the host (slow), CPU tensors scanned in place.
#pragma once

#include "attnkit/tensor.hpp"

namespace attnkit {

/// Number of NaN/Inf elements in a float tensor view (0 for non-float dtypes).
int64_t count_nonfinite(const TensorView& t);
/// Throws Error(kNumericalError) naming `name` when t has NaN/Inf elements.
void require_finite(const TensorView& t, const char* name, const char* when);

}  // namespace attnkit
