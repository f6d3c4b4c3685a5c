// flash3 on the project's hostile shapes (check::hostile_cases) through the public API and the
// check harness, against the `math` oracle, bf16 and f16, forward. Cases flash3 declares it
// cannot run (masks, dropout, Dv != D, D outside {64, 128, 256}, non-TMA strides, a non-sm90
// device; in the backward also varlen (forward only since session 24; window, softcap and ALiBi
// run in both passes since session 24)) are visible skips with the reasons; every other case
// must pass.
// Tolerances: check::default_tolerance (bf16 out rel 1e-2, abs 4e-2, lse 2e-3; f16 out rel 1e-2,
// abs 1e-2, lse 2e-3). Since session 24 also check::large_cases against cuda_math (Flash3Large),
// as flash's tests do.
#include <gtest/gtest.h>

#include "attnkit/backend_info.hpp"
#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"
#include "common/cuda_skip.hpp"

namespace attnkit::testing {
namespace {

class Flash3Hostile : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3Hostile, MatchesOracle) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  ATTNKIT_EXPECT_CHECK_PASSES(check::run_case(GetParam(), "flash3", Device::cuda(0), 11));
}

INSTANTIATE_TEST_SUITE_P(Bf16, Flash3Hostile,
                         ::testing::ValuesIn(check::hostile_cases(DType::bf16)), CaseParamName{});
INSTANTIATE_TEST_SUITE_P(F16, Flash3Hostile, ::testing::ValuesIn(check::hostile_cases(DType::f16)),
                         CaseParamName{});

class Flash3Large : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3Large, MatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const check::Case& c = GetParam();
  ATTNKIT_EXPECT_CHECK_PASSES(check::run_case_against(c, "flash3", "cuda_math", Device::cuda(0), 5,
                                                      check::default_tolerance(c.dtype)));
}

INSTANTIATE_TEST_SUITE_P(Bf16, Flash3Large, ::testing::ValuesIn(check::large_cases(DType::bf16)),
                         CaseParamName{});
INSTANTIATE_TEST_SUITE_P(F16, Flash3Large, ::testing::ValuesIn(check::large_cases(DType::f16)),
                         CaseParamName{});

}  // namespace
}  // namespace attnkit::testing
