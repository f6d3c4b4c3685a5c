// core/philox.hpp: Philox4x32-10 against the Random123 known-answer vectors, and the dropout keep
// rule (threshold, counter/key layout, 4 columns per draw).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "core/philox.hpp"

namespace attnkit {
namespace {

struct Kat {
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t want[4];
};

// Random123's tests/kat_vectors, the three "philox4x32 10" lines (counter, key, expected).
constexpr Kat kKats[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(Philox, Random123KnownAnswers) {
  for (const Kat& k : kKats) {
    const Philox4 r = philox4x32_10(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    for (int w = 0; w < 4; ++w)
      EXPECT_EQ(r.x[w], k.want[w]) << std::hex << "counter " << k.ctr[0] << " word " << w;
  }
}

TEST(Philox, MulHiLo) {
  uint32_t hi, lo;
  philox_mulhilo(0xffffffffu, 0xffffffffu, hi, lo);  // (2^32 - 1)^2 = 2^64 - 2^33 + 1
  EXPECT_EQ(hi, 0xfffffffeu);
  EXPECT_EQ(lo, 0x00000001u);
}

TEST(DropoutThreshold, IsCeilOfPTimes2To24) {
  EXPECT_EQ(dropout_threshold_for(0.0), 0u);
  EXPECT_EQ(dropout_threshold_for(-0.5), 0u);
  EXPECT_EQ(dropout_threshold_for(std::nan("")), 0u);
  EXPECT_EQ(dropout_threshold_for(0.5), 1u << 23);  // exact: no rounding up
  EXPECT_EQ(dropout_threshold_for(0.25), 1u << 22);
  EXPECT_EQ(dropout_threshold_for(1.0 / 16777216.0), 1u);    // one 24-bit step
  EXPECT_EQ(dropout_threshold_for(0.1), 1677722u);           // 1677721.6 -> ceil
  EXPECT_EQ(dropout_threshold_for(1e-9), 1u);                // any p > 0 drops something
  EXPECT_EQ(dropout_threshold_for(0.999999999), 16777216u);  // never above 2^24
}

TEST(DropoutKeep, FollowsTheDocumentedCounterAndKeyLayout) {
  // Element (b, h, i, j): counter {j / 4, i, b * Hq + h, lo32(offset)}, key {lo32(seed),
  // hi32(seed) + hi32(offset)}; word j % 4 >> 8 compared with the threshold.
  const uint64_t seed = 0x0123456789abcdefull, offset = 0x0000000500000007ull;
  const int64_t b = 3, h = 2, hq = 5, i = 77;
  const uint32_t thr = dropout_threshold_for(0.4);
  for (int64_t j = 0; j < 16; ++j) {
    const Philox4 r = philox4x32_10(static_cast<uint32_t>(j / 4), static_cast<uint32_t>(i),
                                    static_cast<uint32_t>(b * hq + h), 0x00000007u, 0x89abcdefu,
                                    0x01234567u + 0x00000005u);
    const bool want = (r.x[j % 4] >> 8) >= thr;
    EXPECT_EQ(dropout_keep(seed, offset, b, h, hq, i, j, thr), want) << "j " << j;
    const uint32_t bits = dropout_keep_bits4(seed, offset, b, h, hq, i, j, thr);
    EXPECT_EQ(((bits >> (j & 3)) & 1u) != 0, want);
    EXPECT_EQ(bits >> 4, 0u);
  }
}

TEST(DropoutKeep, KeepFractionIsOneMinusP) {
  for (double p : {0.1, 0.5, 0.9}) {
    const uint32_t thr = dropout_threshold_for(p);
    int64_t kept = 0, n = 0;
    for (int64_t i = 0; i < 256; ++i)
      for (int64_t j = 0; j < 256; ++j, ++n)
        kept += dropout_keep(42, 0, 0, 1, 4, i, j, thr);
    // n = 65536 draws; 5 standard deviations of the fraction is at most 5 * 0.5 / 256 ~ 0.01.
    EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 0.01) << "p = " << p;
  }
}

TEST(DropoutKeep, DifferentCoordinatesSeedsAndOffsetsGiveDifferentMasks) {
  const uint32_t thr = dropout_threshold_for(0.5);
  auto mask = [&](uint64_t seed, uint64_t offset, int64_t b, int64_t h) {
    uint64_t bits = 0;
    for (int64_t j = 0; j < 64; ++j)
      bits |= static_cast<uint64_t>(dropout_keep(seed, offset, b, h, 8, 3, j, thr)) << j;
    return bits;
  };
  const uint64_t base = mask(1, 0, 0, 0);
  EXPECT_EQ(base, mask(1, 0, 0, 0));
  EXPECT_NE(base, mask(2, 0, 0, 0));
  EXPECT_NE(base, mask(1, 1, 0, 0));
  EXPECT_NE(base, mask(1, uint64_t{1} << 32, 0, 0));  // the offset's high word reaches the key
  EXPECT_NE(base, mask(1, 0, 1, 0));
  EXPECT_NE(base, mask(1, 0, 0, 1));
}

}  // namespace
}  // namespace attnkit
