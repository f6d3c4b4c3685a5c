// Hand-computed forward cases of the oracle's fp64 core: softmax values, visibility rules (causal,
// window, masks), ALiBi, softcap, additive masks, GQA, varlen, layouts, dropout, empty rows and
// zero lengths.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/math/f64_problem.hpp"
#include "core/philox.hpp"

namespace attnkit::testing {
namespace {

// Visibility probe: q = 0 makes every visible score equal (0 plus biases), and v_j = e_j
// (Dv = Sk) makes out[i][j] = P_ij. With no biases out[i][j] = 1/n_visible or 0.
F64Problem probe(int64_t sq, int64_t sk) {
  F64Problem x = F64Problem::dense(1, sq, sk, 1, 1, 2, sk);
  for (int64_t j = 0; j < sk; ++j)
    x.v[x.vi(0, j, 0, j)] = 1.0;
  return x;
}

// The keys whose probability is nonzero in row i of head h (from a probe's output).
std::vector<int64_t> visible_keys(const F64Problem& x, int64_t b, int64_t h, int64_t i) {
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < x.p.seqlen_k; ++j)
    if (x.out[x.oi(b, i, h, j)] != 0.0) keys.push_back(j);
  return keys;
}

std::vector<int64_t> range(int64_t lo, int64_t hi) {  // [lo, hi] clipped to lo <= hi
  std::vector<int64_t> r;
  for (int64_t j = lo; j <= hi; ++j)
    r.push_back(j);
  return r;
}

TEST(MathForward, OneByOne) {
  F64Problem x = F64Problem::dense(1, 1, 1, 1, 1, 2, 3);
  x.q = {0.5, -1.0};
  x.k = {2.0, 0.25};
  x.v = {1.5, -2.0, 4.0};
  x.forward();
  EXPECT_EQ(x.out, (std::vector<double>{1.5, -2.0, 4.0}));  // softmax over one key = 1
  const double s = static_cast<double>(x.p.scale) * (0.5 * 2.0 - 1.0 * 0.25);
  EXPECT_DOUBLE_EQ(x.lse[0], s);
}

TEST(MathForward, TwoKeysKnownSoftmax) {
  F64Problem x = F64Problem::dense(1, 2, 2, 1, 1, 2, 2);
  x.p.scale = 1.0f;
  x.q = {1, 0, /*row 1*/ 0, 2};
  x.k = {1, 0, /*key 1*/ 0, 1};
  x.v = {10, 0, /*key 1*/ 0, 10};
  x.forward();
  // Row 0: s = [1, 0] -> P = [e, 1] / (e + 1). Row 1: s = [0, 2] -> P = [1, e^2] / (1 + e^2).
  const double e = std::exp(1.0), e2 = std::exp(2.0);
  EXPECT_NEAR(x.out[0], 10 * e / (e + 1), 1e-13);
  EXPECT_NEAR(x.out[1], 10 / (e + 1), 1e-13);
  EXPECT_NEAR(x.out[2], 10 / (1 + e2), 1e-13);
  EXPECT_NEAR(x.out[3], 10 * e2 / (1 + e2), 1e-13);
  EXPECT_NEAR(x.lse[0], std::log(e + 1), 1e-14);
  EXPECT_NEAR(x.lse[1], std::log(1 + e2), 1e-14);
}

TEST(MathForward, LseMatchesDirectSumOnRandomInputs) {
  F64Problem x = F64Problem::dense(2, 5, 9, 2, 1, 7, 3);
  x.fill_random(11);
  x.forward();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 5; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < 9; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < 7; ++c)
            dot += x.q[x.qi(b, i, h, c)] * x.k[x.ki(b, j, 0, c)];
          sum += std::exp(x.p.scale * dot);
        }
        EXPECT_NEAR(x.lse[x.li(b, h, i)], std::log(sum), 1e-13);
      }
}

TEST(MathForward, F32LseOutputIsRoundedFp64Lse) {
  F64Problem x = F64Problem::dense(1, 3, 4, 1, 1, 8, 8);
  x.fill_random(3);
  x.forward();
  std::vector<float> lse32(3, -1.f);
  Params p = x.p;
  p.lse = lse32.data();
  math_core::forward(p, math_core::Storage::f64);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(lse32[i], static_cast<float>(x.lse[i]));
}

TEST(MathForward, FullyMaskedRowGivesZeroOutAndMinusInfLse) {
  F64Problem x = F64Problem::dense(1, 3, 4, 1, 1, 4, 4);
  x.fill_random(5);
  x.use_bool_mask();
  for (int64_t j = 0; j < 4; ++j)
    x.bool_mask[x.mask_index(0, 0, 1, j)] = 0;  // row 1: none
  x.forward();
  for (int64_t c = 0; c < 4; ++c)
    EXPECT_EQ(x.out[x.oi(0, 1, 0, c)], 0.0);
  EXPECT_EQ(x.lse[1], -kInf);
  EXPECT_TRUE(std::isfinite(x.lse[0]) && std::isfinite(x.lse[2]));
  for (double o : x.out)
    EXPECT_FALSE(std::isnan(o));
}

TEST(MathForward, AdditiveMinusInfRowIsEmpty) {
  F64Problem x = F64Problem::dense(1, 2, 3, 1, 1, 4, 4);
  x.fill_random(6);
  x.use_additive_mask();
  for (int64_t j = 0; j < 3; ++j)
    x.additive_mask[x.mask_index(0, 0, 0, j)] = -std::numeric_limits<float>::infinity();
  x.forward();
  for (int64_t c = 0; c < 4; ++c)
    EXPECT_EQ(x.out[x.oi(0, 0, 0, c)], 0.0);
  EXPECT_EQ(x.lse[0], -kInf);
  EXPECT_TRUE(std::isfinite(x.lse[1]));
}

TEST(MathForward, CausalTopLeftWithSqLessThanSk) {
  F64Problem x = probe(3, 5);
  x.p.causal = Causal::top_left;  // j <= i
  x.forward();
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(visible_keys(x, 0, 0, i), range(0, i)) << "row " << i;
    EXPECT_NEAR(x.out[x.oi(0, i, 0, 0)], 1.0 / (i + 1), 1e-15);
  }
}

TEST(MathForward, CausalBottomRightWithSqLessThanSk) {
  F64Problem x = probe(3, 5);
  x.p.causal = Causal::bottom_right;  // j <= i + 2
  x.forward();
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(visible_keys(x, 0, 0, i), range(0, i + 2));
}

TEST(MathForward, CausalBothAlignmentsWithSqGreaterThanSk) {
  F64Problem tl = probe(5, 3);
  tl.p.causal = Causal::top_left;  // j <= i: every row sees key 0
  tl.forward();
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(visible_keys(tl, 0, 0, i), range(0, std::min<int64_t>(i, 2)));

  F64Problem br = probe(5, 3);
  br.p.causal = Causal::bottom_right;  // j <= i - 2: rows 0 and 1 see nothing
  br.forward();
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(visible_keys(br, 0, 0, i), range(0, i - 2));
  EXPECT_EQ(br.lse[br.li(0, 0, 0)], -kInf);
  EXPECT_EQ(br.lse[br.li(0, 0, 1)], -kInf);
  EXPECT_TRUE(std::isfinite(br.lse[br.li(0, 0, 2)]));
}

TEST(MathForward, WindowLeftRightBothBottomRightAligned) {
  struct W {
    int64_t left, right;
  };
  for (W w : {W{1, -1}, W{-1, 0}, W{2, 1}, W{0, 0}}) {
    F64Problem x = probe(4, 7);
    x.p.window_left = w.left;
    x.p.window_right = w.right;
    x.forward();
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t diag = i + 7 - 4;
      const int64_t lo = w.left < 0 ? 0 : std::max<int64_t>(0, diag - w.left);
      const int64_t hi = w.right < 0 ? 6 : std::min<int64_t>(6, diag + w.right);
      EXPECT_EQ(visible_keys(x, 0, 0, i), range(lo, hi))
          << "left " << w.left << " right " << w.right << " row " << i;
    }
  }
}

TEST(MathForward, CausalAndMaskMeanBoth) {
  F64Problem x = probe(3, 3);
  x.p.causal = Causal::top_left;
  x.use_bool_mask();
  x.bool_mask[x.mask_index(0, 0, 2, 1)] = 0;  // row 2 loses key 1
  x.bool_mask[x.mask_index(0, 0, 0, 2)] = 0;  // already invisible by causality
  x.forward();
  EXPECT_EQ(visible_keys(x, 0, 0, 0), range(0, 0));
  EXPECT_EQ(visible_keys(x, 0, 0, 1), range(0, 1));
  EXPECT_EQ(visible_keys(x, 0, 0, 2), (std::vector<int64_t>{0, 2}));
}

TEST(MathForward, BroadcastMaskWithZeroStrides) {
  // One [Sq, Sk] mask shared by 2 batches and 2 heads through stride 0.
  F64Problem x = F64Problem::dense(2, 2, 3, 2, 2, 2, 3);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t j = 0; j < 3; ++j)
        x.v[x.vi(b, j, g, j)] = 1.0;
  std::vector<uint8_t> m = {1, 0, 1, /*row 1*/ 0, 1, 0};
  x.p.mask_kind = MaskKind::keep_bool;
  x.p.mask = m.data();
  x.p.mask_st = Strides4{.b = 0, .s = 3, .h = 0, .d = 1};
  x.forward();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h) {
      EXPECT_EQ(visible_keys(x, b, h, 0), (std::vector<int64_t>{0, 2}));
      EXPECT_EQ(visible_keys(x, b, h, 1), (std::vector<int64_t>{1}));
    }
}

TEST(MathForward, AlibiBiasPerHeadAndPerBatch) {
  // q = 0: P_ij proportional to exp(-slope * |i + Sk - Sq - j|).
  for (bool per_batch : {false, true}) {
    F64Problem x = F64Problem::dense(2, 2, 4, 2, 1, 2, 4);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 0; j < 4; ++j)
        x.v[x.vi(b, j, 0, j)] = 1.0;
    x.use_alibi(per_batch);
    x.forward();
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 2; ++i) {
          const double slope = static_cast<double>(0.3f * (h + 1) + (per_batch ? 0.1f * b : 0.f));
          double z = 0;
          std::vector<double> w(4);
          for (int64_t j = 0; j < 4; ++j)
            z += w[j] = std::exp(-slope * std::abs(i + 2 - j));
          for (int64_t j = 0; j < 4; ++j)
            EXPECT_NEAR(x.out[x.oi(b, i, h, j)], w[j] / z, 1e-15);
          EXPECT_NEAR(x.lse[x.li(b, h, i)], std::log(z), 1e-14);
        }
  }
}

TEST(MathForward, SoftcapAppliesTanhBeforeBias) {
  F64Problem x = F64Problem::dense(1, 1, 2, 1, 1, 1, 2);
  x.p.scale = 1.0f;
  x.p.softcap = 2.0f;
  x.use_alibi(false);  // slope 0.3; diag = 1: biases -0.3 (j = 0) and 0 (j = 1)
  x.q = {3.0};
  x.k = {1.0, -0.5};
  x.v = {1, 0, 0, 1};
  x.forward();
  const double s0 = 2.0 * std::tanh(3.0 / 2.0) - static_cast<double>(0.3f) * 1.0;
  const double s1 = 2.0 * std::tanh(-1.5 / 2.0);
  const double z = std::exp(s0) + std::exp(s1);
  EXPECT_NEAR(x.out[0], std::exp(s0) / z, 1e-15);
  EXPECT_NEAR(x.out[1], std::exp(s1) / z, 1e-15);
  EXPECT_NEAR(x.lse[0], std::log(z), 1e-14);
}

TEST(MathForward, AdditiveMaskIsAddedToScores) {
  F64Problem x = probe(1, 3);
  x.use_additive_mask();
  x.additive_mask = {0.5f, -std::numeric_limits<float>::infinity(), -1.0f};
  x.forward();
  const double z = std::exp(0.5) + std::exp(-1.0);
  EXPECT_NEAR(x.out[0], std::exp(0.5) / z, 1e-15);
  EXPECT_EQ(x.out[1], 0.0);
  EXPECT_NEAR(x.out[2], std::exp(-1.0) / z, 1e-15);
  EXPECT_NEAR(x.lse[0], std::log(z), 1e-15);
}

TEST(MathForward, AdditiveMaskInHalfPrecisionIsReadExactly) {
  // f16 mask values 0.5 (0x3800) and -inf (0xFC00).
  F64Problem x = probe(1, 2);
  std::vector<uint16_t> m = {0x3800, 0xFC00};
  x.p.mask_kind = MaskKind::additive;
  x.p.mask_dtype = DType::f16;
  x.p.mask = m.data();
  x.p.mask_st = Strides4{.b = 0, .s = 0, .h = 0, .d = 1};
  x.forward();
  EXPECT_EQ(x.out[0], 1.0);
  EXPECT_EQ(x.out[1], 0.0);
  EXPECT_DOUBLE_EQ(x.lse[0], 0.5);
}

TEST(MathForward, GqaEqualsManuallyExpandedHeads) {
  F64Problem g = F64Problem::dense(2, 5, 6, 4, 2, 3, 5);
  g.fill_random(21);
  g.p.causal = Causal::bottom_right;
  g.forward();
  F64Problem e = F64Problem::dense(2, 5, 6, 4, 4, 3, 5);
  e.q = g.q;
  e.p.causal = Causal::bottom_right;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 6; ++j)
      for (int64_t h = 0; h < 4; ++h) {
        for (int64_t c = 0; c < 3; ++c)
          e.k[e.ki(b, j, h, c)] = g.k[g.ki(b, j, h / 2, c)];
        for (int64_t c = 0; c < 5; ++c)
          e.v[e.vi(b, j, h, c)] = g.v[g.vi(b, j, h / 2, c)];
      }
  e.forward();
  EXPECT_EQ(g.out, e.out);
  EXPECT_EQ(g.lse, e.lse);
}

TEST(MathForward, VarlenEqualsSeparateCalls) {
  const std::vector<int32_t> lq = {3, 0, 4, 2}, lk = {5, 2, 0, 3};
  F64Problem x = F64Problem::varlen(lq, lk, 2, 1, 4, 3);
  x.fill_random(31);
  x.p.causal = Causal::bottom_right;
  x.forward();
  for (size_t s = 0; s < lq.size(); ++s) {
    F64Problem one = F64Problem::dense(1, lq[s], lk[s], 2, 1, 4, 3);
    one.p.causal = Causal::bottom_right;
    for (int64_t i = 0; i < lq[s]; ++i)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t c = 0; c < 4; ++c)
          one.q[one.qi(0, i, h, c)] = x.q[x.qi(0, x.cu_q[s] + i, h, c)];
    for (int64_t j = 0; j < lk[s]; ++j) {
      for (int64_t c = 0; c < 4; ++c)
        one.k[one.ki(0, j, 0, c)] = x.k[x.ki(0, x.cu_k[s] + j, 0, c)];
      for (int64_t c = 0; c < 3; ++c)
        one.v[one.vi(0, j, 0, c)] = x.v[x.vi(0, x.cu_k[s] + j, 0, c)];
    }
    one.forward();
    for (int64_t i = 0; i < lq[s]; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t c = 0; c < 3; ++c)
          EXPECT_EQ(x.out[x.oi(0, x.cu_q[s] + i, h, c)], one.out[one.oi(0, i, h, c)]);
        EXPECT_EQ(x.lse[x.li(0, h, x.cu_q[s] + i)], one.lse[one.li(0, h, i)]);
      }
  }
  // Sequence 2 has no keys: its rows are 0 with lse -inf.
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(x.lse[x.li(0, 1, x.cu_q[2] + i)], -kInf);
}

TEST(MathForward, BhsdEqualsBshd) {
  F64Problem a = F64Problem::dense(2, 4, 5, 4, 2, 3, 2, /*bhsd=*/false);
  F64Problem b = F64Problem::dense(2, 4, 5, 4, 2, 3, 2, /*bhsd=*/true);
  a.fill_random(41);
  // Same logical values in the other physical layout.
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t c = 0; c < 3; ++c)
          b.q[b.qi(n, i, h, c)] = a.q[a.qi(n, i, h, c)];
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t g = 0; g < 2; ++g) {
        for (int64_t c = 0; c < 3; ++c)
          b.k[b.ki(n, j, g, c)] = a.k[a.ki(n, j, g, c)];
        for (int64_t c = 0; c < 2; ++c)
          b.v[b.vi(n, j, g, c)] = a.v[a.vi(n, j, g, c)];
      }
  }
  ASSERT_NE(a.q, b.q);  // the layouts really differ
  a.forward();
  b.forward();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t c = 0; c < 2; ++c)
          EXPECT_EQ(a.out[a.oi(n, i, h, c)], b.out[b.oi(n, i, h, c)]);
  EXPECT_EQ(a.lse, b.lse);
}

TEST(MathForward, DropoutKeepsAboutOneMinusPAndRescalesExactly) {
  const int64_t sq = 64, sk = 48, hq = 3;
  const double prob = 0.3;
  F64Problem x = F64Problem::dense(2, sq, sk, hq, 1, 2, sk);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < sk; ++j)
      x.v[x.vi(b, j, 0, j)] = 1.0;  // out[i][j] = P_ij * f_ij
  x.use_dropout(prob, 0x1234'5678'9abcULL, 7);
  x.forward();
  const double rescale = 1.0 / (1.0 - static_cast<double>(static_cast<float>(prob)));
  int64_t kept = 0, total = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        // Uniform P = 1/sk; lse = log(sk) regardless of dropout.
        EXPECT_NEAR(x.lse[x.li(b, h, i)], std::log(static_cast<double>(sk)), 1e-14);
        for (int64_t j = 0; j < sk; ++j) {
          const bool keep =
              dropout_keep(x.p.seed, x.p.offset, b, h, hq, i, j, x.p.dropout_threshold);
          const double o = x.out[x.oi(b, i, h, j)];
          if (keep)
            EXPECT_DOUBLE_EQ(o, rescale / sk);
          else
            EXPECT_EQ(o, 0.0);
          kept += keep;
          ++total;
        }
      }
  // 18432 Bernoulli(0.7) draws: sd = sqrt(n p q) ~ 62, so +-5 sd is +-0.017 in the fraction.
  const double frac = static_cast<double>(kept) / total;
  EXPECT_NEAR(frac, 1.0 - prob, 0.017);
}

TEST(MathForward, DropoutMaskDependsOnSeedAndOffset) {
  auto run = [](uint64_t seed, uint64_t offset) {
    F64Problem x = F64Problem::dense(1, 8, 8, 1, 1, 2, 8);
    for (int64_t j = 0; j < 8; ++j)
      x.v[x.vi(0, j, 0, j)] = 1.0;
    x.use_dropout(0.5, seed, offset);
    x.forward();
    return x.out;
  };
  EXPECT_EQ(run(1, 0), run(1, 0));
  EXPECT_NE(run(1, 0), run(2, 0));
  EXPECT_NE(run(1, 0), run(1, 1));
}

TEST(MathForward, ResultsDoNotDependOnThreadCount) {
  F64Problem a = F64Problem::dense(3, 9, 11, 4, 2, 5, 6);
  a.fill_random(51);
  a.p.causal = Causal::top_left;
  a.use_dropout(0.2, 9, 3);
  F64Problem b = a;
  a.p.num_threads = 1;
  b.p.num_threads = 4;
  a.forward();
  b.forward();
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.lse, b.lse);
  a.backward();
  b.backward();
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
}

TEST(MathForward, ZeroLengths) {
  F64Problem no_q = F64Problem::dense(2, 0, 3, 1, 1, 2, 2);
  no_q.fill_random(1);
  no_q.forward();  // nothing to write, must not crash
  EXPECT_TRUE(no_q.out.empty());

  F64Problem no_k = F64Problem::dense(2, 3, 0, 2, 1, 2, 2);
  no_k.fill_random(1);
  std::fill(no_k.out.begin(), no_k.out.end(), std::nan(""));
  no_k.forward();
  for (double o : no_k.out)
    EXPECT_EQ(o, 0.0);
  for (double l : no_k.lse)
    EXPECT_EQ(l, -kInf);
  no_k.backward();
  for (double g : no_k.dq)
    EXPECT_EQ(g, 0.0);
}

}  // namespace
}  // namespace attnkit::testing

// ---- visibility sweep: every row of the oracle's output against DESIGN.md §2's rules ---------

namespace attnkit::testing {
namespace {

struct VisCase {
  int64_t sq, sk;
  Causal causal;
  int64_t left, right;
};

std::string vis_name(const ::testing::TestParamInfo<VisCase>& info) {
  const VisCase& c = info.param;
  const char* cz = c.causal == Causal::none ? "none" : (c.causal == Causal::top_left ? "TL" : "BR");
  auto side = [](int64_t w) { return w < 0 ? std::string("inf") : std::to_string(w); };
  return "sq" + std::to_string(c.sq) + "_sk" + std::to_string(c.sk) + "_causal" + cz + "_left" +
         side(c.left) + "_right" + side(c.right);
}

class MathVisibility : public ::testing::TestWithParam<VisCase> {};

TEST_P(MathVisibility, RowsSeeExactlyTheKeysTheRulesAllow) {
  const VisCase& c = GetParam();
  F64Problem x = probe(c.sq, c.sk);
  x.p.causal = c.causal;
  x.p.window_left = c.left;
  x.p.window_right = c.right;
  x.forward();
  for (int64_t i = 0; i < c.sq; ++i) {
    // The rules written out: top_left j <= i; bottom_right j <= i + Sk - Sq; window
    // [i + Sk - Sq - left, i + Sk - Sq + right].
    std::vector<int64_t> want;
    for (int64_t j = 0; j < c.sk; ++j) {
      const int64_t diag = i + c.sk - c.sq;
      bool ok = true;
      if (c.causal == Causal::top_left) ok = ok && j <= i;
      if (c.causal == Causal::bottom_right) ok = ok && j <= diag;
      if (c.left >= 0) ok = ok && j >= diag - c.left;
      if (c.right >= 0) ok = ok && j <= diag + c.right;
      if (ok) want.push_back(j);
    }
    EXPECT_EQ(visible_keys(x, 0, 0, i), want) << "row " << i;
    if (want.empty()) {
      EXPECT_EQ(x.lse[x.li(0, 0, i)], -kInf) << "row " << i;
    } else {
      // Equal scores: P = 1/n on each visible key, lse = log(n).
      EXPECT_NEAR(x.lse[x.li(0, 0, i)], std::log(static_cast<double>(want.size())), 1e-15);
      for (int64_t j : want)
        EXPECT_NEAR(x.out[x.oi(0, i, 0, j)], 1.0 / static_cast<double>(want.size()), 1e-15);
    }
  }
}

std::vector<VisCase> vis_cases() {
  std::vector<VisCase> v;
  for (auto [sq, sk] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {5, 3}, {7, 7}, {4, 9}})
    for (Causal cz : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (auto [l, r] : {std::pair<int64_t, int64_t>{-1, -1}, {2, -1}, {-1, 1}, {1, 1}, {0, 0}})
        v.push_back({sq, sk, cz, l, r});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, MathVisibility, ::testing::ValuesIn(vis_cases()), vis_name);

}  // namespace
}  // namespace attnkit::testing
