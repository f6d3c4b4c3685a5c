// SmemLayout's split address form (lane offset ^ xor_of(C) + add_of(R, C)), which every flash
// fragment load uses, against the plain swizzle off(): exhaustively over every lane position
// (r < 16, c < 16) and every tile offset (R % 8 == 0, C % 16 == 0) of the tile shapes the
// kernels use. Host only, no GPU needed.
#include <gtest/gtest.h>

#include <vector>

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

// The backward's hoisted addresses (ATTNKIT_FLASH_BWD_HOIST, bwd_kernel.cuh), on tiles with
// 64-wide panels only: store_c_smem_split's off(m0 + qr + R, n0 + qc + 8 nt) ==
// (off(m0 + qr, n0 + qc) ^ (nt << 3)) + 64 R for n0 a multiple of 8 NT (NT a power of two,
// 8 NT <= 64), R % 8 == 0; and the Q / dO cp.async rows: off(r0 + kR it, c0) == off(r0, c0) +
// 64 kR it for kR % 8 == 0, c0 % 8 == 0.
template <int ROWS, int COLS, int NT>
int64_t check_hoisted() {
  using L = SmemLayout<ROWS, COLS>;
  static_assert(!L::kHasHalfPanel, "64-wide panels");
  int64_t bad = 0;
  for (int m0 = 0; m0 < ROWS; m0 += 8)
    for (int n0 = 0; n0 < COLS; n0 += 8 * NT)
      for (int qr = 0; qr < 8; ++qr)
        for (int qc = 0; qc < 8; qc += 2)
          for (int R = 0; m0 + qr + R < ROWS; R += 8)
            for (int nt = 0; nt < NT; ++nt) {
              const int split = (L::off(m0 + qr, n0 + qc) ^ (nt << 3)) + 64 * R;
              const int plain = L::off(m0 + qr + R, n0 + qc + 8 * nt);
              if (split != plain && bad++ < 5)
                ADD_FAILURE() << "store (" << ROWS << ", " << COLS << ") m0 " << m0 << " n0 " << n0
                              << " qr " << qr << " qc " << qc << " R " << R << " nt " << nt;
            }
  for (int r0 = 0; r0 < ROWS; ++r0)
    for (int c0 = 0; c0 < COLS; c0 += 8)
      for (int k = 8; r0 + k < ROWS; k += 8)
        if (L::off(r0 + k, c0) != L::off(r0, c0) + 64 * k && bad++ < 5)
          ADD_FAILURE() << "rows (" << ROWS << ", " << COLS << ") r0 " << r0 << " c0 " << c0 << " +"
                        << k;
  return bad;
}

// WarpFragAddr (warp_mma.cuh): (2 off(r + Rw, c + Cw) ^ xor_of(C)) + add_of(R, C) ==
// 2 off(r + Rw + R, c + Cw + C) for lane positions r, c < 16, warp rows Rw % 16 == 0, rows
// R % 8 == 0, and columns either Cw == 0 with any C % 16 == 0 (the k direction), or Cw a multiple
// of a power-of-two extent E <= 64 with C % 16 == 0, C < E (the warp's own columns).
template <int ROWS, int COLS>
int64_t check_warp_origin(int E) {
  using L = SmemLayout<ROWS, COLS>;
  int64_t bad = 0;
  const int cw_step = E >= COLS ? COLS : E;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      for (int Rw = 0; r + Rw < ROWS; Rw += 16)
        for (int Cw = 0; Cw < COLS; Cw += cw_step)
          for (int R = 0; r + Rw + R < ROWS; R += 8)
            for (int C = 0; C < E && c + Cw + C < COLS; C += 16) {
              const uint32_t base = static_cast<uint32_t>(2 * L::off(r + Rw, c + Cw));
              const uint32_t split = (base ^ L::xor_of(C)) + L::add_of(R, C);
              const uint32_t plain = static_cast<uint32_t>(2 * L::off(r + Rw + R, c + Cw + C));
              if (split != plain && bad++ < 5)
                ADD_FAILURE() << "warp origin (" << ROWS << ", " << COLS << ") E " << E << " r "
                              << r << " c " << c << " Rw " << Rw << " Cw " << Cw << " R " << R
                              << " C " << C;
            }
  return bad;
}

TEST(FlashSmemLayout, BackwardHoistedAddresses) {
  for (int E : {16, 32, 64, 1 << 20}) {  // 1 << 20: the k direction (Cw == 0)
    EXPECT_EQ((check_warp_origin<64, 64>(E)), 0);
    EXPECT_EQ((check_warp_origin<64, 128>(E)), 0);
    EXPECT_EQ((check_warp_origin<64, 256>(E)), 0);
    EXPECT_EQ((check_warp_origin<128, 64>(E)), 0);
    EXPECT_EQ((check_warp_origin<128, 128>(E)), 0);
  }
  EXPECT_EQ((check_hoisted<64, 128, 4>()), 0);   // P / dS, D <= 128 (kBM 64): 32 x 32 warp tiles
  EXPECT_EQ((check_hoisted<128, 128, 8>()), 0);  // D = 64 (kBM 128): 32 x 64
  EXPECT_EQ((check_hoisted<64, 64, 4>()), 0);    // D > 128: (64, 64)
  EXPECT_EQ((check_hoisted<64, 64, 2>()), 0);
  EXPECT_EQ((check_hoisted<128, 64, 8>()), 0);  // Q / dO at D = 64
  EXPECT_EQ((check_hoisted<64, 256, 8>()), 0);  // Q / dO at D = 256
}

// TileLoader::chunk_of (TileLoader::load_tid's per-chunk rows, columns and shared offsets,
// ATTNKIT_FLASH_FWD_BM64_DIET_256 = 32): every thread's every chunk is load_tile_async's chunk
// idx = it * kThreads + t (row idx / chunks per row, column (idx % chunks per row) * 8) and its
// shared byte offset is 2 * off(row, col); each chunk of the tile is issued exactly once.
template <int ROWS, int COLS, int kThreads>
int64_t check_tid_chunks() {
  using L = SmemLayout<ROWS, COLS>;
  using TL = TileLoader<L, kThreads>;
  static_assert(TL::kSupported, "threads must cover whole rows");
  constexpr int kCpr = COLS / 8;
  int64_t bad = 0;
  std::vector<int> seen(ROWS * kCpr, 0);
  for (int t = 0; t < kThreads; ++t)
    for (int it = 0; it < TL::kIters; ++it) {
      const auto ch = TL::chunk_of(t, it);
      const int idx = it * kThreads + t, r = idx / kCpr, c = (idx % kCpr) * 8;
      if (ch.row != r || ch.col != c ||
          ch.smem_bytes != static_cast<uint32_t>(2 * L::off(ch.row, ch.col))) {
        if (bad < 5)
          ADD_FAILURE() << "(" << ROWS << ", " << COLS << ") x " << kThreads << " t " << t << " it "
                        << it << ": row " << ch.row << " col " << ch.col << " smem "
                        << ch.smem_bytes << " vs " << r << " " << c << " " << 2 * L::off(r, c);
        ++bad;
      } else {
        ++seen[r * kCpr + c / 8];
      }
    }
  for (int v : seen)
    bad += v != 1;
  return bad;
}

TEST(FlashSmemLayout, TileLoaderTidChunks) {
  EXPECT_EQ((check_tid_chunks<64, 256, 128>()), 0);  // K / V, 64-row D = 256 forward
  EXPECT_EQ((check_tid_chunks<64, 64, 128>()), 0);   // its first Q / K panels
  EXPECT_EQ((check_tid_chunks<64, 128, 128>()), 0);
  EXPECT_EQ((check_tid_chunks<128, 256, 256>()), 0);
  EXPECT_EQ((check_tid_chunks<128, 64, 256>()), 0);
  EXPECT_EQ((check_tid_chunks<64, 64, 256>()), 0);
  EXPECT_EQ((check_tid_chunks<128, 128, 128>()), 0);
}

}  // namespace
}  // namespace attnkit::flash
