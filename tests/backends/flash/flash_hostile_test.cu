// flash on the project's shared cases through the check harness: check::hostile_cases (vs the
// `math` oracle, forward out/lse and backward dq/dk/dv) for f16 and bf16 up to the largest built
// head dim, and check::large_cases against cuda_math on the GPU. Cases flash declares unsupported
// (Dv != D, last-dim stride != 1, ...) skip visibly with the backend's own reasons.
#include <gtest/gtest.h>

#include <algorithm>

#include "attnkit/backend_info.hpp"
#include "backends/flash/flash_head_dims.hpp"
#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"
#include "common/cuda_skip.hpp"

namespace attnkit::testing {
namespace {

constexpr int kMaxBuiltD = flash::kBuiltHeadDims[sizeof(flash::kBuiltHeadDims) / sizeof(int) - 1];

class FlashHostile : public ::testing::TestWithParam<check::Case> {};

TEST_P(FlashHostile, MatchesOracle) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  ATTNKIT_EXPECT_CHECK_PASSES(check::run_case(GetParam(), "flash", Device::cuda(0), 11));
}

INSTANTIATE_TEST_SUITE_P(Bf16, FlashHostile,
                         ::testing::ValuesIn(check::hostile_cases(DType::bf16, kMaxBuiltD)),
                         CaseParamName{});
INSTANTIATE_TEST_SUITE_P(F16, FlashHostile,
                         ::testing::ValuesIn(check::hostile_cases(DType::f16, kMaxBuiltD)),
                         CaseParamName{});

class FlashLarge : public ::testing::TestWithParam<check::Case> {};

TEST_P(FlashLarge, MatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const check::Case& c = GetParam();
  ATTNKIT_EXPECT_CHECK_PASSES(check::run_case_against(c, "flash", "cuda_math", Device::cuda(0), 5,
                                                      check::default_tolerance(c.dtype)));
}

INSTANTIATE_TEST_SUITE_P(Bf16, FlashLarge, ::testing::ValuesIn(check::large_cases(DType::bf16)),
                         CaseParamName{});
INSTANTIATE_TEST_SUITE_P(F16, FlashLarge, ::testing::ValuesIn(check::large_cases(DType::f16)),
                         CaseParamName{});

}  // namespace
}  // namespace attnkit::testing
