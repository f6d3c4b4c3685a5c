// cuda_math through the shared check harness against the `math` oracle on the foundation's
// hostile cases (check::hostile_cases), forward and backward variants, f32 / f16 / bf16.
// Complements cuda_math_test.cpp (own fp64 reference, padding checks, chunking, determinism).
#include <gtest/gtest.h>

#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/cuda_skip.hpp"

namespace attnkit {
namespace {

std::vector<check::Case> all_cases() {
  std::vector<check::Case> v;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (const check::Case& c : check::hostile_cases(t))
      v.push_back(c);
  return v;
}

class CudaMathOracle : public ::testing::TestWithParam<check::Case> {};

TEST_P(CudaMathOracle, MatchesMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const check::Report r = check::run_case(GetParam(), "cuda_math", Device::cuda(0), 1);
  // cuda_math supports every option of the exact tier: a skip here is a capability bug.
  ASSERT_FALSE(r.skipped) << r.detail;
  EXPECT_TRUE(r.pass) << r.detail;
  for (const check::Metric& m : r.metrics)
    EXPECT_TRUE(m.pass) << m.what << ": rel " << m.rel << " max_abs " << m.max_abs << " nonfinite "
                        << m.nonfinite;
}

INSTANTIATE_TEST_SUITE_P(Hostile, CudaMathOracle, ::testing::ValuesIn(all_cases()),
                         testing::CaseParamName{});

}  // namespace
}  // namespace attnkit
