// cudnn vs the math oracle on the check harness's hostile cases (forward out + lse, backward
// dq/dk/dv), f16 and bf16, plus the larger GPU cases against cuda_math when it is built.
// A case cudnn declines must decline for one of the documented reasons (docs/cudnn.md); any
// other skip fails, so an unexpected "unsupported" cannot hide a gap. Skips visibly without GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/cuda_skip.hpp"
#include "dispatch/registry.hpp"

namespace attnkit {
namespace {

/// Phrases of cudnn's own reasons (support.cpp) and capability-table reasons for the options it
/// declares unsupported.
bool documented_reason(const std::string& detail) {
  static const char* kPhrases[] = {"softcap",
                                   "ALiBi",
                                   "dropout",
                                   "multiples of 8",
                                   "head dims up",
                                   "unit stride",
                                   "16-byte",
                                   "diagonal alignment",
                                   "materialized",
                                   "> max 256",
                                   "not supported (supports f16, bf16)",
                                   "s_q = s_kv = 1",
                                   "takes the bias in the input dtype"};
  for (const char* s : kPhrases)
    if (detail.find(s) != std::string::npos) return true;
  return false;
}

std::vector<check::Case> all_hostile() {
  std::vector<check::Case> v = check::hostile_cases(DType::f16);
  for (const auto& c : check::hostile_cases(DType::bf16))
    v.push_back(c);
  return v;
}

class CudnnVsMath : public ::testing::TestWithParam<check::Case> {};

TEST_P(CudnnVsMath, Hostile) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const check::Case& c = GetParam();
  const check::Report r = check::run_case(c, "cudnn", Device::cuda(0));
  if (r.skipped) {
    EXPECT_TRUE(documented_reason(r.detail)) << "undocumented decline: " << r.detail;
    GTEST_SKIP() << "cudnn declines: " << r.detail;
  }
  EXPECT_TRUE(r.pass) << r.detail;
  for (const auto& m : r.metrics)
    EXPECT_TRUE(m.pass) << m.what << ": rel " << m.rel << " max_abs " << m.max_abs << " nonfinite "
                        << m.nonfinite;
}

INSTANTIATE_TEST_SUITE_P(Hostile, CudnnVsMath, ::testing::ValuesIn(all_hostile()),
                         testing::CaseParamName{});

/// Every option cudnn claims must actually run (not decline) on a plain shape.
TEST(CudnnCoverage, ClaimedOptionsRun) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  std::vector<check::Case> cases;
  check::Case base;
  base.b = 2;
  base.sq = 97;
  base.sk = 131;
  base.hq = 4;
  base.hkv = 2;
  base.d = base.dv = 64;
  base.dtype = DType::bf16;
  for (bool bwd : {false, true}) {
    check::Case c = base;
    c.backward = bwd;
    cases.push_back(c);
    c.causal = Causal::top_left;
    cases.push_back(c);
    c.causal = Causal::bottom_right;
    cases.push_back(c);
    c.causal = Causal::none;
    c.window_left = 17;
    c.window_right = 5;
    cases.push_back(c);
    c.window_left = c.window_right = -1;
    c.mask = check::MaskCase::keep_bool;
    cases.push_back(c);
    c.mask = check::MaskCase::additive;
    c.mask_broadcast = 1;  // [1, H, Sq, Sk]
    cases.push_back(c);
    c.mask = check::MaskCase::none;
    c.mask_broadcast = 0;
    c.varlen = true;
    c.seqlens_q = {13, 0, 97, 40};
    c.seqlens_k = {50, 20, 131, 0};
    c.b = 4;
    c.causal = Causal::bottom_right;
    cases.push_back(c);
    c = base;
    c.backward = bwd;
    c.layout = check::Layout::bhsd;
    c.d = c.dv = 128;
    c.deterministic = bwd;
    cases.push_back(c);
  }
  for (const auto& c : cases) {
    const check::Report r = check::run_case(c, "cudnn", Device::cuda(0));
    EXPECT_FALSE(r.skipped) << c.name() << ": " << r.detail;
    EXPECT_TRUE(r.pass) << c.name() << ": " << r.detail;
  }
}

/// Larger shapes against cuda_math (when that backend is in this build).
TEST(CudnnLarge, AgainstCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!built_backend("cuda_math")) GTEST_SKIP() << "cuda_math not in this build";
  int ran = 0;
  for (DType t : {DType::f16, DType::bf16})
    for (const auto& c : check::large_cases(t)) {
      check::Tolerance tol = check::default_tolerance(t);
      const check::Report r =
          check::run_case_against(c, "cudnn", "cuda_math", Device::cuda(0), 1, tol);
      if (r.skipped) {
        EXPECT_TRUE(documented_reason(r.detail)) << c.name() << ": " << r.detail;
        continue;
      }
      ++ran;
      EXPECT_TRUE(r.pass) << c.name() << ": " << r.detail;
    }
  EXPECT_GT(ran, 0);
}

}  // namespace
}  // namespace attnkit
