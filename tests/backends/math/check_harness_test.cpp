// The check harness itself: the hostile set is what DESIGN.md §5 asks for, every case runs
// through the public API with `math` against the oracle (which validates the plumbing: inputs,
// layouts, masks, varlen, poisoning, copies), and deliberately wrong results FAIL.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "attnkit/math.hpp"
#include "check/check.hpp"
#include "check/run.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"

namespace attnkit::check {
namespace {

bool any_of(const std::vector<Case>& v, const std::function<bool(const Case&)>& f) {
  for (const Case& c : v)
    if (f(c)) return true;
  return false;
}

TEST(HostileCases, NamesAreUniqueAndGtestSafe) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    std::set<std::string> names;
    for (const Case& c : hostile_cases(t)) {
      const std::string n = c.name();
      EXPECT_TRUE(names.insert(n).second) << "duplicate " << n;
      for (char ch : n)
        EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') << n;
      EXPECT_EQ(c.dtype, t);
    }
  }
}

TEST(HostileCases, CoverWhatDesignAsksFor) {
  const auto v = hostile_cases(DType::bf16);
  auto has = [&](const char* what, const std::function<bool(const Case&)>& f) {
    EXPECT_TRUE(any_of(v, f)) << "no hostile case with " << what;
  };
  has("Sq = 0", [](const Case& c) { return !c.varlen && c.sq == 0; });
  has("Sk = 0", [](const Case& c) { return !c.varlen && c.sk == 0; });
  has("Sq = Sk = 1", [](const Case& c) { return c.sq == 1 && c.sk == 1; });
  has("prime lengths", [](const Case& c) { return c.sq == 127 && c.sk == 127; });
  for (Causal cz : {Causal::top_left, Causal::bottom_right}) {
    has("Sq < Sk causal", [cz](const Case& c) { return c.causal == cz && c.sq < c.sk; });
    has("Sq > Sk causal", [cz](const Case& c) { return c.causal == cz && c.sq > c.sk; });
  }
  has("varlen with an empty sequence", [](const Case& c) {
    if (!c.varlen) return false;
    for (size_t i = 0; i < c.seqlens_q.size(); ++i)
      if (c.seqlens_q[i] == 0 || c.seqlens_k[i] == 0) return true;
    return false;
  });
  has("varlen without maxima", [](const Case& c) { return c.varlen && !c.varlen_max_given; });
  for (int64_t g : {1, 2, 8})
    has("GQA ratio", [g](const Case& c) { return c.hq / c.hkv == g; });
  for (int64_t d : {32, 64, 80, 96, 128, 192, 256})
    has("head dim", [d](const Case& c) { return c.d == d; });
  has("Dv != D", [](const Case& c) { return c.dv != c.d; });
  has("strided bhsd", [](const Case& c) { return c.noncontiguous && c.layout == Layout::bhsd; });
  has("strided bshd", [](const Case& c) { return c.noncontiguous && c.layout == Layout::bshd; });
  for (MaskCase mk : {MaskCase::keep_bool, MaskCase::additive})
    for (int bc = 0; bc < 8; ++bc)
      has("mask broadcast pattern",
          [mk, bc](const Case& c) { return c.mask == mk && c.mask_broadcast == bc; });
  has("mask given as an expanded (stride-0) view",
      [](const Case& c) { return c.mask != MaskCase::none && (c.mask_broadcast & kMaskExpanded); });
  has("additive mask of another dtype than q", [](const Case& c) {
    return c.mask == MaskCase::additive && c.mask_dtype && *c.mask_dtype != c.dtype;
  });
  has("window left only", [](const Case& c) { return c.window_left >= 0 && c.window_right < 0; });
  has("window right only", [](const Case& c) { return c.window_left < 0 && c.window_right >= 0; });
  has("window both", [](const Case& c) { return c.window_left >= 0 && c.window_right >= 0; });
  has("softcap", [](const Case& c) { return c.softcap > 0 && c.backward; });
  has("alibi [Hq]", [](const Case& c) { return c.alibi && !c.alibi_per_batch; });
  has("alibi [B, Hq]", [](const Case& c) { return c.alibi && c.alibi_per_batch; });
  has("dropout backward", [](const Case& c) { return c.dropout_p > 0 && c.backward; });
  has("deterministic backward", [](const Case& c) { return c.deterministic && c.backward; });
  has("no lse", [](const Case& c) { return !c.lse; });
}

TEST(HostileCases, MaxHeadDimFilters) {
  for (const Case& c : hostile_cases(DType::f16, 128)) {
    EXPECT_LE(c.d, 128) << c.name();
    EXPECT_LE(c.dv, 128) << c.name();
  }
}

TEST(LargeCases, AreLargeAndNamed) {
  const auto v = large_cases(DType::bf16);
  ASSERT_FALSE(v.empty());
  std::set<std::string> names;
  for (const Case& c : v) {
    EXPECT_TRUE(names.insert(c.name()).second);
    EXPECT_GE(std::max(c.sq, c.sk), 1000) << c.name();
  }
}

// Every hostile case, math against the oracle through the public API: identical bits expected.
class MathAgainstOracle : public ::testing::TestWithParam<Case> {};

TEST_P(MathAgainstOracle, MatchesExactly) {
  const Case& c = GetParam();
  const Report r = run_case(c, "math", Device::cpu(), 7);
  ASSERT_FALSE(r.skipped) << r.detail;
  ASSERT_TRUE(r.pass) << r.detail << "\n  " << attnkit::testing::describe_metrics(r);
  EXPECT_EQ(r.case_name, c.name());
  ASSERT_EQ(r.metrics.size(),
            1u + (c.lse || c.backward) + (c.backward ? 3u : 0u) + (c.deterministic ? 3u : 0u));
  for (const Metric& m : r.metrics) {
    EXPECT_EQ(m.rel, 0.0) << m.what;
    EXPECT_EQ(m.max_abs, 0.0) << m.what;
    EXPECT_EQ(m.nonfinite, 0) << m.what;
  }
}

INSTANTIATE_TEST_SUITE_P(F32, MathAgainstOracle, ::testing::ValuesIn(hostile_cases(DType::f32)),
                         attnkit::testing::CaseParamName{});
INSTANTIATE_TEST_SUITE_P(Bf16, MathAgainstOracle, ::testing::ValuesIn(hostile_cases(DType::bf16)),
                         attnkit::testing::CaseParamName{});

// ---- the harness must be able to fail ------------------------------------------------------

Case small_case(bool backward) {
  Case c;
  c.b = 2;
  c.sq = 9;
  c.sk = 13;
  c.hq = 2;
  c.hkv = 1;
  c.d = c.dv = 16;
  c.layout = Layout::bhsd;
  c.noncontiguous = true;
  c.causal = Causal::bottom_right;  // Sq < Sk: every row sees a key
  c.mask = MaskCase::keep_bool;     // fully masked rows: lse -inf there
  c.backward = backward;
  return c;
}

Report run_altered(const Case& c, const detail::OutputHook& hook,
                   const Tolerance& tol = default_tolerance(DType::f32)) {
  return detail::run_case_impl(c, "math", "math", Device::cpu(), 3, tol, hook);
}

const Metric* metric(const Report& r, const std::string& what) {
  for (const Metric& m : r.metrics)
    if (m.what == what) return &m;
  return nullptr;
}

void expect_fails_on(const Report& r, const std::string& what) {
  EXPECT_FALSE(r.skipped);
  EXPECT_FALSE(r.pass) << "a wrong " << what << " passed";
  const Metric* m = metric(r, what);
  ASSERT_NE(m, nullptr) << what;
  EXPECT_FALSE(m->pass) << r.detail;
  EXPECT_NE(r.detail.find(what), std::string::npos) << r.detail;
}

// Logical element e of t, overwritten with the bytes of poison (NaN) or a value.
void poison_element(detail::HostTensor& t, int64_t e) {
  const int sz = dtype_size(t.dtype);
  std::memset(t.bytes.data() + t.offsets()[static_cast<size_t>(e)] * sz, 0xFF, sz);
}
double get(const detail::HostTensor& t, int64_t e) {
  return t.values()[static_cast<size_t>(e)];
}

TEST(HarnessFails, UnalteredSmallCasePasses) {
  ATTNKIT_EXPECT_CHECK_PASSES(run_altered(small_case(true), nullptr));
}

TEST(HarnessFails, DescribeMetricsNamesTheFailingMetric) {
  const Report r =
      run_altered(small_case(false), [](detail::Outputs& o) { o.out.set(0, get(o.out, 0) + 1.0); });
  const std::string d = attnkit::testing::describe_metrics(r);
  EXPECT_NE(d.find("out rel"), std::string::npos) << d;
  EXPECT_NE(d.find("FAIL"), std::string::npos) << d;
}

TEST(HarnessFails, OnOneWrongOutputElement) {
  expect_fails_on(run_altered(small_case(false),
                              [](detail::Outputs& o) { o.out.set(5, get(o.out, 5) + 0.01); }),
                  "out");
}

TEST(HarnessFails, OnAnUnwrittenElement) {
  const Report r =
      run_altered(small_case(false), [](detail::Outputs& o) { poison_element(o.out, 17); });
  expect_fails_on(r, "out");
  EXPECT_EQ(metric(r, "out")->nonfinite, 1);
}

TEST(HarnessFails, OnAWriteOutsideTheView) {
  expect_fails_on(
      run_altered(small_case(false), [](detail::Outputs& o) { o.out.bytes.back() = 0; }), "out");
}

TEST(HarnessFails, OnLseFiniteWhereReferenceIsMinusInf) {
  const Report r = run_altered(small_case(false), [](detail::Outputs& o) {
    const auto vals = o.lse.values();
    for (size_t e = 0; e < vals.size(); ++e)
      if (vals[e] == -INFINITY) {
        o.lse.set(static_cast<int64_t>(e), 0.0);
        return;
      }
    FAIL() << "the case has no empty row";
  });
  expect_fails_on(r, "lse");
}

TEST(HarnessFails, OnLseMinusInfWhereReferenceIsFinite) {
  const Report r = run_altered(small_case(false), [](detail::Outputs& o) {
    const auto vals = o.lse.values();
    for (size_t e = 0; e < vals.size(); ++e)
      if (std::isfinite(vals[e])) {
        o.lse.set(static_cast<int64_t>(e), -INFINITY);
        return;
      }
  });
  expect_fails_on(r, "lse");
}

TEST(HarnessFails, OnSlightlyWrongLse) {
  expect_fails_on(run_altered(small_case(false),
                              [](detail::Outputs& o) {
                                const auto vals = o.lse.values();
                                for (size_t e = 0; e < vals.size(); ++e)
                                  if (std::isfinite(vals[e])) {
                                    o.lse.set(static_cast<int64_t>(e), vals[e] + 1e-3);
                                    return;
                                  }
                              }),
                  "lse");
}

TEST(HarnessFails, OnEachWrongGradient) {
  for (const char* what : {"dq", "dk", "dv"}) {
    const std::string w = what;
    const Report r = run_altered(small_case(true), [w](detail::Outputs& o) {
      detail::HostTensor& t = w == "dq" ? o.dq : (w == "dk" ? o.dk : o.dv);
      const auto vals = t.values();
      double big = 0;
      size_t at = 0;
      for (size_t e = 0; e < vals.size(); ++e)
        if (std::abs(vals[e]) > big) big = std::abs(vals[at = e]);
      t.set(static_cast<int64_t>(at), vals[at] * 1.05);  // 5% off in the largest element
    });
    expect_fails_on(r, w);
  }
}

TEST(HarnessFails, OnNonDeterministicBackward) {
  Case c = small_case(true);
  c.deterministic = true;
  EXPECT_TRUE(run_altered(c, nullptr).pass);
  const Report r = run_altered(c, [](detail::Outputs& o) {
    // One f32 ulp.
    o.dk2.set(3, std::nextafter(static_cast<float>(get(o.dk2, 3)), 1e9f));
  });
  expect_fails_on(r, "dk_repeat");
}

TEST(HarnessFails, ToleranceIsWhatDecides) {
  // A 1e-6 relative error in one element: within f32's default bound, outside a 1e-9 bound.
  auto nudge = [](detail::Outputs& o) { o.out.set(4, get(o.out, 4) * (1 + 1e-6)); };
  EXPECT_TRUE(run_altered(small_case(false), nudge).pass);
  Tolerance tight = default_tolerance(DType::f32);
  tight.out_rel = 1e-9;
  expect_fails_on(run_altered(small_case(false), nudge, tight), "out");
}

TEST(HarnessSkips, BackendNotBuiltIsASkipWithTheReason) {
  // flash3 needs CUDA and sm90a: never built in a CPU-only build, and never runs CPU tensors.
  const Report r = run_case(small_case(false), "flash3", Device::cpu(), 1);
  EXPECT_TRUE(r.skipped) << r.detail;
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.detail.empty());
}

TEST(HarnessSkips, UnknownBackendIsAFailureNotASkip) {
  const Report r = run_case(small_case(false), "no_such_backend", Device::cpu(), 1);
  EXPECT_FALSE(r.skipped);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("no_such_backend"), std::string::npos) << r.detail;
}

TEST(HarnessSkips, OracleOverItsCapIsASkip) {
  set_math_max_bytes(1024);
  Case c = small_case(false);
  const Report r =
      run_case_against(c, "math", "math", Device::cpu(), 1, default_tolerance(DType::f32));
  set_math_max_bytes(0);
  EXPECT_TRUE(r.skipped) << r.detail;
  EXPECT_NE(r.detail.find("ATTNKIT_MATH_MAX_BYTES"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace attnkit::check
