// flash3 on the project's hostile shapes (check::hostile_cases) through the public API and the
// check harness, against the `math` oracle, bf16 and f16, forward. Cases flash3 declares it
// cannot run (varlen, masks, dropout, Dv != D, D outside {64, 128, 256}, non-TMA strides, a
// non-sm90 device; in the backward also window, softcap and ALiBi, which the forward runs since
// session 23) are visible skips with the reasons; every other case must pass. Tolerances:
// check::default_tolerance (bf16 out rel 1e-2, abs 4e-2, lse 2e-3; f16 out rel 1e-2, abs 1e-2, lse
// 2e-3).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace attnkit::testing
