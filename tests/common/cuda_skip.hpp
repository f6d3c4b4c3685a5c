// Visible skips for GPU tests (DESIGN.md §5: GPU tests compile everywhere and skip visibly).
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace attnkit::testing {

/// True when this build has CUDA and at least one CUDA device is visible. Otherwise false, with
/// the reason in *why ("attnkit built without CUDA", "no CUDA device visible", or the error).
bool cuda_available(std::string* why);

/// True when backend `name` (canonical) is built into this binary, e.g. "cuda_math" for the GPU
/// reference of the large cases.
bool backend_built(const std::string& name);

}  // namespace attnkit::testing

/// In a TEST body: skips the test with the reason when no CUDA device can be used.
#define ATTNKIT_SKIP_IF_NO_CUDA()                                   \
  do {                                                              \
    std::string attnkit_no_cuda_why_;                               \
    if (!::attnkit::testing::cuda_available(&attnkit_no_cuda_why_)) \
      GTEST_SKIP() << "no CUDA: " << attnkit_no_cuda_why_;          \
  } while (0)
