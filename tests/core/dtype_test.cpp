// Host dtype conversions (core/dtype_convert.hpp): every f16/bf16/f8 bit pattern round-trips,
// NaN stays NaN, and f32 -> narrow rounding is round-to-nearest-even, checked on halfway cases
// and against an independent nearest-value search on random f32 inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "attnkit/tensor.hpp"
#include "core/dtype_convert.hpp"

namespace attnkit {
namespace {

bool f16_is_nan(uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0;
}
bool bf16_is_nan(uint16_t h) {
  return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) != 0;
}

TEST(DtypeF16, EveryBitPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const uint16_t back = f32_to_f16(f);
    if (f16_is_nan(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(f16_is_nan(back)) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h << " -> " << f;
    }
  }
}

TEST(DtypeBf16, EveryBitPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    const uint16_t back = f32_to_bf16(f);
    if (bf16_is_nan(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(bf16_is_nan(back)) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h << " -> " << f;
    }
  }
}

TEST(DtypeF16, KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
}

TEST(DtypeF16, RoundsHalfwayCasesToEven) {
  const float ulp1 = std::ldexp(1.0f, -10);           // f16 spacing at 1
  EXPECT_EQ(f32_to_f16(1.0f + 0.5f * ulp1), 0x3c00);  // tie -> even (1.0)
  EXPECT_EQ(f32_to_f16(1.0f + 1.5f * ulp1), 0x3c02);  // tie -> even (1 + 2 ulp)
  EXPECT_EQ(f32_to_f16(std::nextafter(1.0f + 0.5f * ulp1, 2.0f)), 0x3c01);  // above tie -> up
  EXPECT_EQ(f32_to_f16(-(1.0f + 0.5f * ulp1)), 0xbc00);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // below the tie with 65536: max finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // tie: even is 2^16 -> overflow -> Inf
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);      // tie with 0 -> 0
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie -> even subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);      // below half the min subnormal
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -26)), 0x8000);     // keeps the sign
}

TEST(DtypeBf16, RoundsHalfwayCasesToEven) {
  const float ulp1 = std::ldexp(1.0f, -7);  // bf16 spacing at 1
  EXPECT_EQ(f32_to_bf16(1.0f + 0.5f * ulp1), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 1.5f * ulp1), 0x3f82);
  EXPECT_EQ(f32_to_bf16(std::nextafter(1.0f + 0.5f * ulp1, 2.0f)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // above the last tie: Inf
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(bf16_is_nan(f32_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  // A signalling NaN whose payload lies only in the low 16 bits must stay NaN, not become Inf.
  EXPECT_TRUE(bf16_is_nan(f32_to_bf16(f32_from_bits(0x7f800001u))));
}

// Independent RNE reference: the nearest of the sorted finite non-negative values of a format
// (all bit patterns 0..max_bits are monotone), ties to the even bit pattern, beyond the largest
// finite value by more than half an ulp -> overflow (returns -1).
int64_t nearest_even(double x, const std::vector<double>& values, bool& tie) {
  tie = false;
  const auto it = std::lower_bound(values.begin(), values.end(), x);
  if (it == values.end()) {
    const double last = values.back(), ulp = last - values[values.size() - 2];
    if (x - last < ulp / 2) return static_cast<int64_t>(values.size() - 1);
    if (x - last == ulp / 2) {  // tie with the next (non-existent, odd -> even) value: overflow
      tie = true;
      return -2;
    }
    return -1;
  }
  const int64_t hi = it - values.begin();
  if (*it == x || hi == 0) return hi;
  const int64_t lo = hi - 1;
  const double dl = x - values[static_cast<size_t>(lo)], dh = values[static_cast<size_t>(hi)] - x;
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  tie = true;
  return (lo % 2 == 0) ? lo : hi;
}

template <typename ToF32, typename FromF32>
void expect_random_floats_round_to_nearest_even(uint32_t max_finite_bits, uint32_t inf_bits,
                                                ToF32 to_f32, FromF32 from_f32, int shift) {
  std::vector<double> values;
  for (uint32_t b = 0; b <= max_finite_bits; ++b)
    values.push_back(to_f32(b));
  std::mt19937 gen(123);
  int checked = 0, ties = 0;
  for (int n = 0; n < 400000; ++n) {
    // Random f32 bit patterns in the format's range, biased towards exact ties (low bits zeroed).
    uint32_t u = gen() & 0x7fffffffu;
    if (n % 4 == 0) u &= ~((1u << (shift - 1)) - 1);  // keep the bit just below the target ulp
    const float f = f32_from_bits(u);
    if (!std::isfinite(f)) continue;
    const double x = f;
    bool tie = false;
    const int64_t want = nearest_even(x, values, tie);
    ties += tie;
    const uint32_t got = from_f32(f);
    const uint32_t got_neg = from_f32(-f);
    if (want >= 0) {
      ASSERT_EQ(got, static_cast<uint32_t>(want)) << "x = " << x;
    } else {
      ASSERT_EQ(got, inf_bits) << "x = " << x << " should overflow";
    }
    ASSERT_EQ(got_neg, got | (inf_bits == 0x7c00u || inf_bits == 0x7f80u ? 0x8000u : 0x80u))
        << "sign symmetry at " << x;
    ++checked;
  }
  EXPECT_GT(checked, 300000);
  EXPECT_GT(ties, 3000);  // exact halfway cases are well represented
}

TEST(DtypeF16, RandomFloatsRoundToNearestEven) {
  expect_random_floats_round_to_nearest_even(
      0x7bff, 0x7c00, [](uint32_t b) { return f16_to_f32(static_cast<uint16_t>(b)); },
      [](float f) { return static_cast<uint32_t>(f32_to_f16(f)); }, 13);
}

TEST(DtypeBf16, RandomFloatsRoundToNearestEven) {
  expect_random_floats_round_to_nearest_even(
      0x7f7f, 0x7f80, [](uint32_t b) { return bf16_to_f32(static_cast<uint16_t>(b)); },
      [](float f) { return static_cast<uint32_t>(f32_to_bf16(f)); }, 16);
}

TEST(DtypeF8e4m3, EveryBytePatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffu; ++b) {
    const float f = f8e4m3_to_f32(static_cast<uint8_t>(b));
    const uint8_t back = f32_to_f8e4m3(f);
    if ((b & 0x7fu) == 0x7fu) {  // the only NaN encodings (no Inf in e4m3fn)
      ASSERT_TRUE(std::isnan(f)) << b;
      ASSERT_EQ(back & 0x7fu, 0x7fu) << b;
    } else {
      ASSERT_TRUE(std::isfinite(f)) << b;
      ASSERT_EQ(back, b) << b << " -> " << f;
    }
  }
  EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(f8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(f8e4m3_to_f32(0x38), 1.0f);
}

TEST(DtypeF8e4m3, RoundingAndOverflow) {
  EXPECT_EQ(f32_to_f8e4m3(1.0625f), 0x38);  // tie between 1 and 1.125 -> 1 (even)
  EXPECT_EQ(f32_to_f8e4m3(1.1875f), 0x3a);  // tie between 1.125 and 1.25 -> 1.25 (even)
  EXPECT_EQ(f32_to_f8e4m3(1.07f), 0x39);    // above the tie -> up
  EXPECT_EQ(f32_to_f8e4m3(464.0f), 0x7e);   // tie between 448 and 480: even is 448
  EXPECT_EQ(f32_to_f8e4m3(465.0f), 0x7f);   // rounds to 480, beyond 448: NaN (non-saturating)
  EXPECT_EQ(f32_to_f8e4m3(-1e9f), 0xff);
  EXPECT_EQ(f32_to_f8e4m3(std::numeric_limits<float>::infinity()), 0x7f);
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.0f, -10)), 0x00);      // tie with 0 -> 0
  EXPECT_EQ(f32_to_f8e4m3(3 * std::ldexp(1.0f, -10)), 0x02);  // tie -> even subnormal
}

TEST(DtypeF8e5m2, EveryBytePatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffu; ++b) {
    const float f = f8e5m2_to_f32(static_cast<uint8_t>(b));
    const uint8_t back = f32_to_f8e5m2(f);
    const bool nan = (b & 0x7cu) == 0x7cu && (b & 0x03u) != 0;
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << b;
      ASSERT_TRUE((back & 0x7cu) == 0x7cu && (back & 0x03u) != 0) << b;
    } else {
      ASSERT_EQ(back, b) << b << " -> " << f;
    }
  }
  EXPECT_EQ(f8e5m2_to_f32(0x7b), 57344.0f);
  EXPECT_TRUE(std::isinf(f8e5m2_to_f32(0x7c)));
}

TEST(DtypeF8e5m2, RoundingAndOverflow) {
  EXPECT_EQ(f32_to_f8e5m2(1.125f), 0x3c);    // tie between 1 and 1.25 -> 1
  EXPECT_EQ(f32_to_f8e5m2(1.375f), 0x3e);    // tie between 1.25 and 1.5 -> 1.5
  EXPECT_EQ(f32_to_f8e5m2(61439.0f), 0x7b);  // below the tie: max finite
  EXPECT_EQ(f32_to_f8e5m2(61440.0f), 0x7c);  // tie: even is 2^16 -> Inf
  EXPECT_EQ(f32_to_f8e5m2(-1e9f), 0xfc);
}

TEST(DtypeElementAccess, LoadStoreAndRoundToDtype) {
  uint16_t h[2] = {0, 0};
  store_from_double(h, 1, DType::bf16, 1.0 + std::ldexp(1.0, -8));  // tie -> 1.0
  EXPECT_EQ(h[1], 0x3f80);
  store_from_double(h, 0, DType::f16, -2.0);
  EXPECT_EQ(load_as_double(h, 0, DType::f16), -2.0);
  EXPECT_EQ(round_to_dtype(0.1, DType::f32), static_cast<double>(0.1f));
  // 1 + 0.75 ulp (f16 ulp at 1 is 2^-10) -> 1 + 1 ulp.
  EXPECT_EQ(round_to_dtype(1.0 + 0.75 * std::ldexp(1.0, -10), DType::f16),
            1.0 + std::ldexp(1.0, -10));
  const uint8_t b[2] = {0, 7};
  EXPECT_EQ(load_as_double(b, 1, DType::b8), 1.0);
  EXPECT_EQ(load_as_double(b, 0, DType::b8), 0.0);
}

}  // namespace
}  // namespace attnkit
