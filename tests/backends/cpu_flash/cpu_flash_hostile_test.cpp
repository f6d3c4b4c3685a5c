// cpu_flash on the project's hostile shapes (check::hostile_cases: lengths 0/1/prime, Sq != Sk in
// both causal alignments, varlen with empty sequences, GQA 1/2/8, D 32..256, Dv != D, strided and
// both layouts, masks broadcast every way incl. expanded stride-0 views, all-masked rows, window,
// softcap, ALiBi, dropout, large scores), forward (out, lse) and backward (dq, dk, dv), f32, bf16
// and f16, through check::run_case against the `math` oracle.
//
// Tolerances: check::default_tolerance(dtype), the project's exact-tier bounds: f32 out rel 1e-5
// (abs 1e-4), lse abs 1e-4, grads rel 1e-4; f16 out rel 1e-2 (abs 1e-2), lse 2e-3, grads 2e-2;
// bf16 out rel 1e-2 (abs 4e-2), lse 2e-3, grads 2e-2. cpu_flash supports every option, so no
// hostile case may be skipped.
#include <gtest/gtest.h>

#include "check/check.hpp"
#include "common/case_printing.hpp"

namespace attnkit::testing {
namespace {

class CpuFlashHostile : public ::testing::TestWithParam<check::Case> {};

TEST_P(CpuFlashHostile, MatchesOracle) {
  const check::Case& c = GetParam();
  const check::Report r = check::run_case(c, "cpu_flash", Device::cpu(), 7);
  ASSERT_FALSE(r.skipped) << "cpu_flash declared it cannot run: " << r.detail;
  EXPECT_TRUE(r.pass) << r.detail;
  for (const check::Metric& m : r.metrics)
    EXPECT_TRUE(m.pass) << m.what << ": rel " << m.rel << ", max abs " << m.max_abs
                        << ", nonfinite " << m.nonfinite;
  EXPECT_FALSE(r.metrics.empty());
}

INSTANTIATE_TEST_SUITE_P(F32, CpuFlashHostile,
                         ::testing::ValuesIn(check::hostile_cases(DType::f32)), CaseParamName{});
INSTANTIATE_TEST_SUITE_P(Bf16, CpuFlashHostile,
                         ::testing::ValuesIn(check::hostile_cases(DType::bf16)), CaseParamName{});
INSTANTIATE_TEST_SUITE_P(F16, CpuFlashHostile,
                         ::testing::ValuesIn(check::hostile_cases(DType::f16)), CaseParamName{});

}  // namespace
}  // namespace attnkit::testing
