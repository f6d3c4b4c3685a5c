// core/score_policy.hpp: the visibility rules (causal alignments, bottom-right aligned windows),
// sequence spans (dense and varlen) and the ALiBi bias, against the rules of DESIGN.md §2 written
// out independently here.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/score_policy.hpp"

namespace attnkit {
namespace {

// DESIGN.md §2, literally: top_left j <= i; bottom_right j <= i + Sk - Sq; window bottom-right
// aligned: i + Sk - Sq - left <= j <= i + Sk - Sq + right (-1 = unbounded); always 0 <= j < Sk.
bool visible_by_definition(Causal c, int64_t left, int64_t right, int64_t i, int64_t j, int64_t sq,
                           int64_t sk) {
  if (j < 0 || j >= sk) return false;
  const int64_t diag = i + sk - sq;
  if (c == Causal::top_left && j > i) return false;
  if (c == Causal::bottom_right && j > diag) return false;
  if (left >= 0 && j < diag - left) return false;
  if (right >= 0 && j > diag + right) return false;
  return true;
}

TEST(ScorePolicy, StructuralRangeMatchesTheDefinitionEverywhere) {
  int64_t checked = 0, empty_rows = 0;
  for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
    for (int64_t left : {-1, 0, 1, 3})
      for (int64_t right : {-1, 0, 2})
        for (int64_t sq : {1, 3, 7})
          for (int64_t sk : {0, 1, 4, 9}) {
            Params p;
            p.causal = c;
            p.window_left = left;
            p.window_right = right;
            for (int64_t i = 0; i < sq; ++i) {
              const KeyRange r = structural_key_range(p, i, sq, sk);
              bool any = false;
              for (int64_t j = -2; j < sk + 2; ++j) {
                const bool want = visible_by_definition(c, left, right, i, j, sq, sk);
                const bool in_range = j >= r.lo && j <= r.hi;
                ASSERT_EQ(in_range, want)
                    << "causal " << static_cast<int>(c) << " left " << left << " right " << right
                    << " sq " << sq << " sk " << sk << " i " << i << " j " << j;
                if (j >= 0 && j < sk) {
                  ASSERT_EQ(structurally_visible(p, i, j, sq, sk), want);
                }
                any = any || want;
                ++checked;
              }
              if (!any) {
                ++empty_rows;
                EXPECT_GT(r.lo, r.hi);  // an empty row is an empty range
              }
            }
          }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(empty_rows, 0);  // the sweep covers rows with no visible key
}

TEST(ScorePolicy, CausalAlignmentsOnRectangularShapes) {
  Params p;
  p.causal = Causal::top_left;
  EXPECT_EQ(structural_key_range(p, 0, 2, 5).hi, 0);  // Sq < Sk: row 0 sees key 0 only
  EXPECT_EQ(structural_key_range(p, 4, 5, 2).hi, 1);  // Sq > Sk: capped at Sk - 1
  p.causal = Causal::bottom_right;
  EXPECT_EQ(structural_key_range(p, 0, 2, 5).hi, 3);       // diag = i + 3
  const KeyRange none = structural_key_range(p, 0, 5, 2);  // diag = -3: nothing visible
  EXPECT_GT(none.lo, none.hi);
}

TEST(ScorePolicy, SeqSpanDenseAndVarlen) {
  Params p;
  p.seqlen_q = 7;
  p.seqlen_k = 11;
  SeqSpan s = seq_span(p, 3);
  EXPECT_EQ(s.q_start, 0);
  EXPECT_EQ(s.k_start, 0);
  EXPECT_EQ(s.sq, 7);
  EXPECT_EQ(s.sk, 11);

  const std::vector<int32_t> cq = {0, 4, 4, 9}, ck = {0, 2, 8, 8};
  p.varlen = true;
  p.cu_seqlens_q = cq.data();
  p.cu_seqlens_k = ck.data();
  s = seq_span(p, 1);  // empty query sequence
  EXPECT_EQ(s.q_start, 4);
  EXPECT_EQ(s.sq, 0);
  EXPECT_EQ(s.k_start, 2);
  EXPECT_EQ(s.sk, 6);
  s = seq_span(p, 2);  // empty key sequence
  EXPECT_EQ(s.q_start, 4);
  EXPECT_EQ(s.sq, 5);
  EXPECT_EQ(s.sk, 0);
}

TEST(ScorePolicy, AlibiBias) {
  Params p;
  EXPECT_EQ(alibi_bias<double>(p, 0, 0, 3, 1, 4, 4), 0.0);  // no slopes: no bias
  const float slopes[] = {0.5f, 0.25f, /*batch 1*/ 1.0f, 2.0f};
  p.alibi = slopes;
  p.alibi_st_b = 2;
  p.alibi_st_h = 1;
  // -slope * |i + Sk - Sq - j|
  EXPECT_EQ(alibi_bias<double>(p, 0, 0, 2, 2, 4, 4), 0.0);
  EXPECT_EQ(alibi_bias<double>(p, 0, 0, 2, 0, 4, 4), -1.0);
  EXPECT_EQ(alibi_bias<double>(p, 0, 1, 0, 5, 2, 6), -0.25);  // diag 4, |4 - 5| = 1
  EXPECT_EQ(alibi_bias<double>(p, 1, 1, 0, 0, 2, 6), -8.0);   // slope 2, distance 4
  EXPECT_EQ(alibi_bias<float>(p, 1, 0, 3, 0, 4, 2), -1.0f);   // diag 1: distance 1
  p.alibi_st_b = 0;                                           // [Hq] slopes: batch ignored
  EXPECT_EQ(alibi_bias<double>(p, 1, 1, 0, 0, 2, 6), -1.0);
}

}  // namespace
}  // namespace attnkit
