// When `auto` tries flash3 before cuDNN (src/dispatch/flash3_preference.hpp): the backward classes
// of sessions 25-38 unchanged, and session 56's dense forwards (D 128 from 1k; D 64 non-causal
// from 1k, causal from 2k; D 256 causal from 1k, non-causal from 2k; plain calls without dropout).
// Host-only (no GPU needed): the end-to-end selection is Flash3AutoForward / Flash3AutoBackward in
// tests/backends/flash3/flash3_backward_test.cu.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/params.hpp"
#include "dispatch/flash3_preference.hpp"

namespace attnkit {
namespace {

Params dense(int64_t d, int64_t s, Causal causal, bool backward) {
  Params p;
  p.batch = 2;
  p.seqlen_q = p.seqlen_k = s;
  p.heads_q = p.heads_kv = 8;
  p.head_dim = p.head_dim_v = d;
  p.causal = causal;
  p.is_backward = backward;
  return p;
}

TEST(Flash3Preference, ForwardD128FromOneK) {
  for (const Causal c : {Causal::none, Causal::top_left, Causal::bottom_right}) {
    EXPECT_TRUE(flash3_preferred(dense(128, 1024, c, false), false));
    EXPECT_TRUE(flash3_preferred(dense(128, 16384, c, false), false));
    EXPECT_FALSE(flash3_preferred(dense(128, 1023, c, false), false));  // below the range
    EXPECT_TRUE(flash3_preferred(dense(128, 4096, c, false), true));    // the flag: backward only
  }
}

TEST(Flash3Preference, ForwardD64CausalAndD256NonCausalFromTwoK) {
  EXPECT_TRUE(flash3_preferred(dense(64, 1024, Causal::none, false), false));
  EXPECT_FALSE(flash3_preferred(dense(64, 1024, Causal::top_left, false), false));  // 0.97x
  EXPECT_FALSE(flash3_preferred(dense(64, 2047, Causal::top_left, false), false));
  EXPECT_TRUE(flash3_preferred(dense(64, 2048, Causal::bottom_right, false), false));
  EXPECT_TRUE(flash3_preferred(dense(256, 1024, Causal::top_left, false), false));
  EXPECT_FALSE(flash3_preferred(dense(256, 1024, Causal::none, false), false));  // 0.98-1.03x
  EXPECT_TRUE(flash3_preferred(dense(256, 2048, Causal::none, false), false));
}

TEST(Flash3Preference, ForwardNeedsBothLengths) {
  Params p = dense(128, 4096, Causal::none, false);
  p.seqlen_q = 512;  // a short query block against long keys: not measured
  EXPECT_FALSE(flash3_preferred(p, false));
  p.seqlen_q = 4096;
  p.seqlen_k = 1000;
  EXPECT_FALSE(flash3_preferred(p, false));
  // D 64 causal needs 2k on both sides too.
  Params q = dense(64, 4096, Causal::top_left, false);
  q.seqlen_k = 1536;
  EXPECT_FALSE(flash3_preferred(q, false));
}

TEST(Flash3Preference, ForwardOnlyPlainCallsWithoutDropout) {
  Params p = dense(128, 4096, Causal::none, false);
  p.window_left = 256;
  EXPECT_FALSE(flash3_preferred(p, false));
  p.window_left = -1;
  p.window_right = 0;
  EXPECT_FALSE(flash3_preferred(p, false));
  p.window_right = -1;
  p.mask_kind = MaskKind::keep_bool;
  EXPECT_FALSE(flash3_preferred(p, false));
  p.mask_kind = MaskKind::none;
  p.dropout_threshold = 1u << 20;
  EXPECT_FALSE(flash3_preferred(p, false));
  p.dropout_threshold = 0;
  EXPECT_TRUE(flash3_preferred(p, false));  // (the same call, plain again)
}

TEST(Flash3Preference, ForwardOtherHeadDimsKeepTheOrder) {
  for (const int64_t d : {32, 80, 96, 192})
    for (const Causal c : {Causal::none, Causal::top_left})
      EXPECT_FALSE(flash3_preferred(dense(d, 16384, c, false), false)) << "D = " << d;
}

TEST(Flash3Preference, VarlenBackwardOnly) {
  Params p = dense(128, 4096, Causal::none, false);
  p.varlen = true;
  EXPECT_FALSE(flash3_preferred(p, false));  // the varlen forward keeps the order
  p.is_backward = true;
  EXPECT_TRUE(flash3_preferred(p, false));
  p.mask_kind = MaskKind::keep_bool;  // (the varlen backward rule predates the plain-call test)
  EXPECT_TRUE(flash3_preferred(p, true));
}

TEST(Flash3Preference, BackwardClassesUnchanged) {
  // D 256 and causal D 64 at every length, deterministic too.
  for (const bool det : {false, true}) {
    EXPECT_TRUE(flash3_preferred(dense(256, 128, Causal::none, true), det));
    EXPECT_TRUE(flash3_preferred(dense(256, 4096, Causal::top_left, true), det));
    EXPECT_TRUE(flash3_preferred(dense(64, 256, Causal::bottom_right, true), det));
  }
  // D 128 and non-causal D 64 from 1k, non-deterministic only.
  EXPECT_TRUE(flash3_preferred(dense(128, 1024, Causal::top_left, true), false));
  EXPECT_TRUE(flash3_preferred(dense(64, 1024, Causal::none, true), false));
  EXPECT_FALSE(flash3_preferred(dense(128, 1024, Causal::top_left, true), true));
  EXPECT_FALSE(flash3_preferred(dense(128, 512, Causal::none, true), false));
  EXPECT_FALSE(flash3_preferred(dense(64, 512, Causal::none, true), false));
  // D 192 from 4k, non-deterministic; D 96 never.
  EXPECT_TRUE(flash3_preferred(dense(192, 4096, Causal::none, true), false));
  EXPECT_FALSE(flash3_preferred(dense(192, 2048, Causal::none, true), false));
  EXPECT_FALSE(flash3_preferred(dense(192, 4096, Causal::none, true), true));
  EXPECT_FALSE(flash3_preferred(dense(96, 16384, Causal::none, true), false));
  // Windows keep the order.
  Params w = dense(256, 4096, Causal::none, true);
  w.window_left = 100;
  EXPECT_FALSE(flash3_preferred(w, false));
}

}  // namespace
}  // namespace attnkit
