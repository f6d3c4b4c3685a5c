// The oracle's backward against fp64 central finite differences of L = sum(dout * out(q, k, v)),
// through the fp64 core, for every option. Value-parameterised; names print the option set.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/math/f64_problem.hpp"

namespace attnkit::testing {
namespace {

struct GradCase {
  std::string name;
  bool varlen = false;
  bool bhsd = false;
  int64_t b = 2, sq = 5, sk = 7, hq = 4, hkv = 2, d = 3, dv = 4;
  Causal causal = Causal::none;
  int64_t window_left = -1, window_right = -1;
  float softcap = 0.f;
  int alibi = 0;  // 0 off, 1 [Hq], 2 [B, Hq]
  MaskKind mask = MaskKind::none;
  double dropout = 0.0;
};

void PrintTo(const GradCase& c, std::ostream* os) {
  *os << c.name;
}

F64Problem build(const GradCase& c) {
  F64Problem x = c.varlen ? F64Problem::varlen({3, 0, 4, 2}, {2, 3, 0, 5}, c.hq, c.hkv, c.d, c.dv)
                          : F64Problem::dense(c.b, c.sq, c.sk, c.hq, c.hkv, c.d, c.dv, c.bhsd);
  x.fill_random(1000 + c.name.size());
  // Larger scale than 1/sqrt(D) so probabilities are far from uniform (stronger test).
  x.p.scale = 0.9f;
  x.p.causal = c.causal;
  x.p.window_left = c.window_left;
  x.p.window_right = c.window_right;
  x.p.softcap = c.softcap;
  if (c.alibi) x.use_alibi(c.alibi == 2);
  if (c.mask == MaskKind::keep_bool) {
    x.use_bool_mask();
    for (size_t e = 0; e < x.bool_mask.size(); ++e)
      x.bool_mask[e] = (e * 7919 % 10) >= 3;
    for (int64_t j = 0; j < x.p.seqlen_k; ++j)
      x.bool_mask[x.mask_index(1, 2, 3, j)] = 0;
  } else if (c.mask == MaskKind::additive) {
    x.use_additive_mask();
    for (size_t e = 0; e < x.additive_mask.size(); ++e)
      x.additive_mask[e] = (e * 7919 % 10) == 0 ? -INFINITY : 0.25f * static_cast<float>(e % 5);
    for (int64_t j = 0; j < x.p.seqlen_k; ++j)
      x.additive_mask[x.mask_index(0, 1, 2, j)] = -INFINITY;
  }
  if (c.dropout > 0) x.use_dropout(c.dropout, 77, 5);
  return x;
}

class MathGradient : public ::testing::TestWithParam<GradCase> {};

// Central differences with step h: truncation O(h^2 * f''') ~ 1e-10 and cancellation
// O(eps * |L| / h) ~ 1e-10 for |L| ~ 10 — far below the 1e-7 bound, far above fp64 noise of the
// analytic gradient.
void expect_matches_finite_differences(F64Problem& x, std::vector<double>& input,
                                       const std::vector<double>& grad, const char* what) {
  constexpr double h = 1e-5;
  int64_t nonzero = 0;
  for (size_t e = 0; e < input.size(); ++e) {
    const double saved = input[e];
    input[e] = saved + h;
    const double up = x.loss();
    input[e] = saved - h;
    const double down = x.loss();
    input[e] = saved;
    const double fd = (up - down) / (2 * h);
    ASSERT_NEAR(grad[e], fd, 1e-7 * (1 + std::abs(fd))) << what << "[" << e << "]";
    nonzero += grad[e] != 0.0;
  }
  EXPECT_GT(nonzero, 0) << what << ": an all-zero gradient tests nothing";
}

TEST_P(MathGradient, MatchesCentralFiniteDifferences) {
  const GradCase& c = GetParam();
  F64Problem x = build(c);
  x.backward();
  const std::vector<double> dq = x.dq, dk = x.dk, dv = x.dv;
  for (double g : dq)
    ASSERT_TRUE(std::isfinite(g));
  for (double g : dk)
    ASSERT_TRUE(std::isfinite(g));
  for (double g : dv)
    ASSERT_TRUE(std::isfinite(g));
  expect_matches_finite_differences(x, x.q, dq, "dq");
  expect_matches_finite_differences(x, x.k, dk, "dk");
  expect_matches_finite_differences(x, x.v, dv, "dv");
}

TEST_P(MathGradient, EmptyRowsHaveZeroGradient) {
  const GradCase& c = GetParam();
  F64Problem x = build(c);
  x.forward();
  x.backward();
  int64_t rows = x.p.varlen ? x.cu_q.back() : x.p.seqlen_q;
  for (int64_t b = 0; b < (x.p.varlen ? 1 : x.p.batch); ++b)
    for (int64_t h = 0; h < x.p.heads_q; ++h)
      for (int64_t i = 0; i < rows; ++i) {
        if (x.lse[x.li(b, h, i)] != -kInf) continue;
        for (int64_t e = 0; e < x.p.head_dim; ++e)
          EXPECT_EQ(x.dq[x.qi(b, i, h, e)], 0.0);
      }
}

TEST(MathGradientIgnoresProvidedOutAndLse, OutAndLseAreRecomputed) {
  F64Problem x = F64Problem::dense(1, 3, 4, 2, 1, 3, 3);
  x.fill_random(8);
  x.backward();
  const auto dq = x.dq;
  Params p = x.p;
  std::vector<double> junk_out(x.out.size(), NAN);
  std::vector<float> junk_lse(x.lse.size(), NAN);
  p.out = junk_out.data();
  p.lse = junk_lse.data();
  std::vector<double> dq2(dq.size()), dk2(x.dk.size()), dv2(x.dv.size());
  p.dq = dq2.data();
  p.dk = dk2.data();
  p.dv = dv2.data();
  math_core::backward(p, math_core::Storage::f64);
  EXPECT_EQ(dq2, dq);
  EXPECT_EQ(dk2, x.dk);
  EXPECT_EQ(dv2, x.dv);
}

GradCase make(std::string name) {
  GradCase c;
  c.name = std::move(name);
  return c;
}

std::vector<GradCase> grad_cases() {
  std::vector<GradCase> v;
  v.push_back(make("plain"));
  {
    auto c = make("bhsd");
    c.bhsd = true;
    v.push_back(c);
  }
  {
    auto c = make("causal_top_left_sq5_sk7");
    c.causal = Causal::top_left;
    v.push_back(c);
  }
  {
    auto c = make("causal_bottom_right_sq7_sk4");
    c.causal = Causal::bottom_right;
    c.sq = 7;
    c.sk = 4;
    v.push_back(c);
  }
  {
    auto c = make("window_l1_r1");
    c.window_left = 1;
    c.window_right = 1;
    v.push_back(c);
  }
  {
    auto c = make("window_left2_only");
    c.window_left = 2;
    v.push_back(c);
  }
  {
    auto c = make("softcap_1p5");
    c.softcap = 1.5f;
    v.push_back(c);
  }
  {
    auto c = make("alibi_per_head");
    c.alibi = 1;
    v.push_back(c);
  }
  {
    auto c = make("alibi_per_batch");
    c.alibi = 2;
    v.push_back(c);
  }
  {
    auto c = make("mask_bool_with_empty_row");
    c.mask = MaskKind::keep_bool;
    v.push_back(c);
  }
  {
    auto c = make("mask_additive_with_neg_inf");
    c.mask = MaskKind::additive;
    v.push_back(c);
  }
  {
    auto c = make("dropout_0p3");
    c.dropout = 0.3;
    v.push_back(c);
  }
  {
    auto c = make("gqa_8_to_1");
    c.hq = 8;
    c.hkv = 1;
    c.b = 1;
    v.push_back(c);
  }
  {
    auto c = make("mqa_dv_ne_d");
    c.hkv = 1;
    c.d = 5;
    c.dv = 2;
    v.push_back(c);
  }
  {
    auto c = make("varlen_empty_seqs_causal");
    c.varlen = true;
    c.causal = Causal::bottom_right;
    v.push_back(c);
  }
  {
    auto c = make("varlen_dropout_softcap_alibi");
    c.varlen = true;
    c.dropout = 0.25;
    c.softcap = 2.f;
    c.alibi = 1;
    v.push_back(c);
  }
  {
    auto c = make("everything");
    c.causal = Causal::top_left;
    c.window_left = 3;
    c.softcap = 1.f;
    c.alibi = 2;
    c.mask = MaskKind::additive;
    c.dropout = 0.2;
    c.bhsd = true;
    v.push_back(c);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Options, MathGradient, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace attnkit::testing
