// The flash3 backward's CTA order by shape (src/backends/flash3/bwd_order_rule.hpp, sessions 49 /
// 50, 51): a requested value wins on causal calls at every head dim; the auto sections D 256 causal
// calls from 3072 keys while one section (4 pairs x group x S_q x D x 8 bytes) fits 32 MiB, D 128
// with kBwdOrderAutoD128 (on since session 50) from 1280 keys (session 52; 2048 in session 51)
// in sections of 8 while they fit 28 MiB, else of 4 within 32 MiB (session 51), D 64 never;
// non-causal calls always run the hardware's order. D 128 rounds the sections to a power of two
// dividing Hkv (bwd_order_shift). Host-only (no GPU needed).
#include <gtest/gtest.h>

#include "backends/flash3/bwd_order_rule.hpp"

namespace attnkit::flash3 {
namespace {

TEST(Flash3BwdOrderRule, NonCausalAlwaysHardwareOrder) {
  for (const int64_t d : {64, 128, 256})
    for (const bool auto_d128 : {false, true})
      for (const int requested : {-1, 0, 4, 8})
        EXPECT_EQ(bwd_order_sections(requested, false, d, 4096, 4096, 1, auto_d128), 0)
            << "d " << d << " requested " << requested;
}

TEST(Flash3BwdOrderRule, RequestedValueWinsOnCausalD64AndD128) {
  for (const int64_t d : {64, 128})
    for (const bool auto_d128 : {false, true}) {
      EXPECT_EQ(bwd_order_sections(0, true, d, 4096, 4096, 1, auto_d128), 0);
      EXPECT_EQ(bwd_order_sections(2, true, d, 517, 300, 2, auto_d128), 2);
      EXPECT_EQ(bwd_order_sections(4, true, d, 4096, 4096, 1, auto_d128), 4);
      EXPECT_EQ(bwd_order_sections(8, true, d, 1024, 1024, 1, auto_d128), 8);    // below the auto
      EXPECT_EQ(bwd_order_sections(4, true, d, 16384, 16384, 8, auto_d128), 4);  // past its bound
      EXPECT_EQ(bwd_order_sections(6, true, d, 4096, 4096, 1, auto_d128), 6);    // (shift rounds)
    }
}

TEST(Flash3BwdOrderRule, AutoAtD64Never) {
  for (const bool auto_d128 : {false, true})
    for (const int64_t s : {1024, 3072, 4096, 8192, 16384})
      EXPECT_EQ(bwd_order_sections(-1, true, 64, s, s, 1, auto_d128), 0) << s;
}

// The default (no auto_d128 argument) follows kBwdOrderAutoD128.
TEST(Flash3BwdOrderRule, AutoAtD128Default) {
  for (const int64_t s : {1024, 1279, 1280, 1536, 1792, 2048, 3072, 3328, 4096, 8192, 16384}) {
    const int want = !kBwdOrderAutoD128 || s < 1280 || s > 8192 ? 0 : s < 4096 ? 8 : 4;
    EXPECT_EQ(bwd_order_sections(-1, true, 128, s, s, 1), want) << s;
  }
}

// With the flag on (session 51; from 1280 keys since session 52): sections of 8 at causal while
// 8 x group x S_q x 128 x 8 bytes fit 28 MiB (group x S_q <= 3584), else of 4 while 4 x ... fit
// 32 MiB (group x S_q <= 8192); below 1280 keys the hardware's order.
TEST(Flash3BwdOrderRule, AutoAtD128WhenEnabled) {
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 1024, 1024, 1, true), 0);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 1279, kBwdOrderMinKeysD128 - 1, 1, true), 0);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 1280, kBwdOrderMinKeysD128, 1, true), 8);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 2048, 2048, 1, true), 8);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 3072, 3072, 1, true), 8);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 3584, 3584, 1, true), 8);  // 28 MiB exactly
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 3585, 3584, 1, true), 4);  // one row over
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 4096, 4096, 1, true), 4);
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 8192, 8192, 1, true), 4);    // 32 MiB exactly
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 8193, 8192, 1, true), 0);    // one row over
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 16384, 16384, 1, true), 0);  // 64 MiB
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 2048, 2048, 2, true), 4);    // GQA 2: 32 MiB of 8
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 1792, 2048, 2, true), 8);    // GQA 2, S_q 1792
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 4096, 4096, 2, true), 4);    // GQA 2: 32 MiB
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 4096, 4096, 4, true), 0);    // GQA 4: 64 MiB
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 3000, 1200, 1, true), 0);    // keys below 1280
  EXPECT_EQ(bwd_order_sections(-1, true, 128, 3000, 2000, 1, true), 8);    // S_q 3000 <= 3584
}

// D 64 / 128's shift: the largest power of two <= the sections that divides Hkv.
TEST(Flash3BwdOrderRule, ShiftIsLargestPowerOfTwoDividingHkv) {
  const int64_t nkb = 64;
  for (const int sections : {-1, 0, 1})
    EXPECT_EQ(bwd_order_shift(sections, 16, nkb), 0);
  EXPECT_EQ(bwd_order_shift(4, 16, nkb), 2);  // the bench's shapes (Hkv 16)
  EXPECT_EQ(bwd_order_shift(2, 16, nkb), 1);
  EXPECT_EQ(bwd_order_shift(8, 16, nkb), 3);
  EXPECT_EQ(bwd_order_shift(16, 16, nkb), 4);
  EXPECT_EQ(bwd_order_shift(32, 16, nkb), 4);  // at most Hkv
  EXPECT_EQ(bwd_order_shift(3, 16, nkb), 1);   // rounded down to a power of two
  EXPECT_EQ(bwd_order_shift(6, 16, nkb), 2);
  EXPECT_EQ(bwd_order_shift(7, 16, nkb), 2);
  EXPECT_EQ(bwd_order_shift(4, 6, nkb), 1);  // Hkv 6: pairs
  EXPECT_EQ(bwd_order_shift(8, 6, nkb), 1);
  EXPECT_EQ(bwd_order_shift(2, 6, nkb), 1);
  EXPECT_EQ(bwd_order_shift(8, 12, nkb), 2);  // Hkv 12: 4 divides, 8 does not
  EXPECT_EQ(bwd_order_shift(4, 4, nkb), 2);
  EXPECT_EQ(bwd_order_shift(8, 4, nkb), 2);
  for (const int64_t hkv : {1, 3, 5, 7, 9, 15})  // Hkv odd: the hardware's order
    for (const int sections : {2, 4, 8})
      EXPECT_EQ(bwd_order_shift(sections, hkv, nkb), 0) << hkv;
  EXPECT_EQ(bwd_order_shift(4, 0, nkb), 0);
}

// The grid's x, key blocks << sh, stays below 2^31.
TEST(Flash3BwdOrderRule, ShiftKeepsGridXInRange) {
  EXPECT_EQ(bwd_order_shift(4, 16, int64_t{1} << 28), 2);        // 2^30
  EXPECT_EQ(bwd_order_shift(4, 16, (int64_t{1} << 29) + 1), 1);  // x 4 would pass 2^31 - 1
  EXPECT_EQ(bwd_order_shift(4, 16, int64_t{1} << 30), 0);
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

// D 256 (bwd_launch_d256.cuh) reads the same function: its results are session 49's, unrounded
// (its kernel decodes partial sections) and independent of the D 128 flag. The reference is
// session 49's rule, copied.
TEST(Flash3BwdOrderRule, D256UnchangedSinceSession49) {
  const auto s49 = [](int requested, bool causal, int64_t d, int64_t sq, int64_t sk,
                      int64_t group) {
    if (!causal || d != 256) return 0;
    if (requested >= 0) return requested;
    if (sk < kBwdOrderMinKeys) return 0;
    return kBwdOrderAutoSections * group * sq * d * 8 <= kBwdOrderMaxSectionBytes
               ? kBwdOrderAutoSections
               : 0;
  };
  for (const bool causal : {false, true})
    for (const bool auto_d128 : {false, true})
      for (const int requested : {-1, 0, 1, 2, 3, 4, 6, 8, 16})
        for (const int64_t sq : {1, 517, 1024, 2048, 3071, 3072, 3200, 4096, 4097, 8192, 16384})
          for (const int64_t sk : {1, 300, 1024, 3071, 3072, 4096, 16384})
            for (const int64_t group : {1, 2, 4, 8})
              EXPECT_EQ(bwd_order_sections(requested, causal, 256, sq, sk, group, auto_d128),
                        s49(requested, causal, 256, sq, sk, group))
                  << causal << " " << requested << " " << sq << " " << sk << " " << group;
}

}  // namespace
}  // namespace attnkit::flash3
