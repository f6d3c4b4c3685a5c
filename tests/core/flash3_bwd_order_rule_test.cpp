// The flash3 backward's CTA order by shape (src/backends/flash3/bwd_order_rule.hpp, session 49):
// a requested value wins on causal calls, the auto sections D 128 / 256 causal calls from 3072 keys
// while one section (4 pairs x group x S_q x D x 8 bytes) fits 32 MiB, and non-causal calls always
// run the hardware's order. Host-only (no GPU needed).
#include <gtest/gtest.h>

#include "backends/flash3/bwd_order_rule.hpp"

namespace attnkit::flash3 {
namespace {

TEST(Flash3BwdOrderRule, NonCausalAlwaysHardwareOrder) {
  for (const int requested : {-1, 0, 4, 8})
    EXPECT_EQ(bwd_order_sections(requested, false, 128, 4096, 4096, 1), 0) << requested;
}

TEST(Flash3BwdOrderRule, RequestedValueWinsOnCausalCalls) {
  EXPECT_EQ(bwd_order_sections(0, true, 128, 4096, 4096, 1), 0);  // the auto would section
  EXPECT_EQ(bwd_order_sections(8, true, 64, 1024, 1024, 1), 8);   // the auto would not
  EXPECT_EQ(bwd_order_sections(2, true, 256, 16384, 16384, 8), 2);
}

TEST(Flash3BwdOrderRule, AutoByHeadDimAndKeys) {
  // D 64: never (nothing measured to gain).
  for (const int64_t s : {1024, 3072, 4096, 8192})
    EXPECT_EQ(bwd_order_sections(-1, true, 64, s, s, 1), 0) << s;
  // D 128 / 256: from kBwdOrderMinKeys keys.
  for (const int64_t d : {128, 256}) {
    EXPECT_EQ(bwd_order_sections(-1, true, d, 3071, kBwdOrderMinKeys - 1, 1), 0) << d;
    EXPECT_EQ(bwd_order_sections(-1, true, d, 3072, kBwdOrderMinKeys, 1), kBwdOrderAutoSections)
        << d;
    EXPECT_EQ(bwd_order_sections(-1, true, d, 2048, 2048, 1), 0) << d;
  }
  // The measured shapes: D 128 4096 / 8192 yes, 16384 no; D 256 4096 yes, 8192 no.
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 4096, 4096, 1), 4);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 8192, 8192, 1), 4);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 16384, 16384, 1), 0);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 4096, 4096, 1), 4);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 8192, 8192, 1), 0);
}

TEST(Flash3BwdOrderRule, SectionFootprintBoundCountsTheGroupAndQueryRows) {
  // 4 x group x S_q x D x 8 bytes <= 32 MiB: at D 128, group x S_q <= 8192.
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 4096, 4096, 2), 4);   // 32 MiB exactly
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 4097, 4096, 2), 0);   // one row over
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 4096, 4096, 4), 0);   // GQA 4: 64 MiB
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 1024, 16384, 1), 4);  // few query rows, long keys
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 16384, 3072, 1), 0);  // many query rows
}

}  // namespace
}  // namespace attnkit::flash3
