// The flash3 backward's CTA order by shape (src/backends/flash3/bwd_order_rule.hpp, session 49):
// D 256 only; a requested value wins on causal D 256 calls; the auto sections D 256 causal calls
// from 3072 keys while one section (4 pairs x group x S_q x D x 8 bytes) fits 32 MiB; non-causal
// calls and D 64 / 128 always run the hardware's order. Host-only (no GPU needed).
#include <gtest/gtest.h>

#include "backends/flash3/bwd_order_rule.hpp"

namespace attnkit::flash3 {
namespace {

TEST(Flash3BwdOrderRule, NonCausalAlwaysHardwareOrder) {
  for (const int requested : {-1, 0, 4, 8})
    EXPECT_EQ(bwd_order_sections(requested, false, 256, 4096, 4096, 1), 0) << requested;
}

TEST(Flash3BwdOrderRule, HeadDims64And128AlwaysHardwareOrder) {
  for (const int64_t d : {64, 128})
    for (const int requested : {-1, 0, 4, 8})
      for (const int64_t s : {1024, 3072, 4096, 8192})
        EXPECT_EQ(bwd_order_sections(requested, true, d, s, s, 1), 0)
            << "d " << d << " requested " << requested << " s " << s;
}

TEST(Flash3BwdOrderRule, RequestedValueWinsOnCausalD256) {
  EXPECT_EQ(bwd_order_sections(0, true, 256, 4096, 4096, 1), 0);  // the auto would section
  EXPECT_EQ(bwd_order_sections(8, true, 256, 1024, 1024, 1), 8);  // the auto would not
  EXPECT_EQ(bwd_order_sections(2, true, 256, 16384, 16384, 8), 2);
}

TEST(Flash3BwdOrderRule, AutoByKeysAtD256) {
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 3071, kBwdOrderMinKeys - 1, 1), 0);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 3072, kBwdOrderMinKeys, 1), kBwdOrderAutoSections);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 1024, 1024, 1), 0);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 2176, 2176, 1), 0);
  // The measured shapes: 3328 / 4096 yes, 8192 / 16384 no.
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 3328, 3328, 1), 4);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 4096, 4096, 1), 4);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 8192, 8192, 1), 0);
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 16384, 16384, 1), 0);
}

TEST(Flash3BwdOrderRule, SectionFootprintBoundCountsTheGroupAndQueryRows) {
  // 4 x group x S_q x 256 x 8 bytes <= 32 MiB: group x S_q <= 4096.
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 4096, 4096, 1), 4);   // 32 MiB exactly
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 4097, 4096, 1), 0);   // one row over
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 2048, 4096, 2), 4);   // GQA 2, half the rows
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 3200, 3100, 2), 0);   // GQA 2: 52 MB
  EXPECT_EQ(bwd_order_sections(-1, true, 256, 1024, 16384, 1), 4);  // few query rows, long keys
}

}  // namespace
}  // namespace attnkit::flash3
