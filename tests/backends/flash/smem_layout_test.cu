// SmemLayout's split address form (lane offset ^ xor_of(C) + add_of(R, C)), which every flash
// fragment load uses, against the plain swizzle off(): exhaustively over every lane position
// (r < 16, c < 16) and every tile offset (R % 8 == 0, C % 16 == 0) of the tile shapes the
// kernels use. Host only, no GPU needed.
#include <gtest/gtest.h>

#include "backends/flash/smem_layout.hpp"

namespace attnkit::flash {
namespace {

template <int ROWS, int COLS>
int64_t check_layout() {
  using L = SmemLayout<ROWS, COLS>;
  int64_t bad = 0;
  for (int r = 0; r < 16 && r < ROWS; ++r)
    for (int c = 0; c < 16; ++c)
      for (int R = 0; r + R < ROWS; R += 8)
        for (int C = 0; c + C < COLS; C += 16) {
          const uint32_t lane = L::in_half(C) ? L::lane_half(r, c) : L::lane_full(r, c);
          const uint32_t split = (lane ^ L::xor_of(C)) + L::add_of(R, C);
          const uint32_t plain = static_cast<uint32_t>(2 * L::off(r + R, c + C));
          if (split != plain) {
            if (bad < 5)
              ADD_FAILURE() << "(" << ROWS << ", " << COLS << ") r " << r << " c " << c << " R "
                            << R << " C " << C << ": split " << split << " vs " << plain;
            ++bad;
          }
        }
  return bad;
}

TEST(FlashSmemLayout, SplitAddressEqualsSwizzle) {
  EXPECT_EQ((check_layout<64, 64>()), 0);
  EXPECT_EQ((check_layout<64, 96>()), 0);
  EXPECT_EQ((check_layout<64, 128>()), 0);
  EXPECT_EQ((check_layout<64, 192>()), 0);
  EXPECT_EQ((check_layout<64, 256>()), 0);
  EXPECT_EQ((check_layout<128, 64>()), 0);
  EXPECT_EQ((check_layout<128, 96>()), 0);
  EXPECT_EQ((check_layout<128, 128>()), 0);
  EXPECT_EQ((check_layout<32, 128>()), 0);
  EXPECT_EQ((check_layout<32, 192>()), 0);
  EXPECT_EQ((check_layout<64, 32>()), 0);
  EXPECT_EQ((check_layout<128, 32>()), 0);
}

}  // namespace
}  // namespace attnkit::flash
