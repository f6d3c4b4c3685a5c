// The fused backward's element check from one band of diagonals (ATTNKIT_FLASH_BWD_CHECK_LIMITS,
// bwd_kernel.cuh: diag_band / band_limits / band_visible) against the structural rules of
// core/score_policy.hpp, which the old per-row check applies (row_range, clipped to
// [0, sk - 1]): every lane position and element offset of a tile, every tile of small
// sequences, and tiles near the diagonal of long ones. Host only, no GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/flash/bwd_kernel.cuh"
#include "core/score_policy.hpp"

namespace attnkit::flash {
namespace {

// Every (row, key) of the tile at (m0, n0), split as the kernel splits it: lane offsets
// (io, jo) and element offsets (R, C) with R % 8 == 0.
int64_t check_tile(const Params& p, int64_t sq, int64_t sk, int64_t m0, int64_t n0, int bm,
                   int bn) {
  const DiagBand band = diag_band(p, sq, sk);
  int64_t bad = 0;
  for (int io = 0; io < 8; ++io)
    for (int jo = 0; jo < 8; jo += 2) {
      const BandLimits l = band_limits(band, m0, n0, sk, io, jo);
      for (int R = 0; io + R < bm; R += 8)
        for (int C = 0; jo + C < bn; ++C) {
          const int64_t i = m0 + io + R, j = n0 + jo + C;
          const bool want = j < sk && structurally_visible(p, i, j, sq, sk);
          if (band_visible(l, R, C) != want) {
            if (bad < 5)
              ADD_FAILURE() << "sq " << sq << " sk " << sk << " causal "
                            << static_cast<int>(p.causal) << " window (" << p.window_left << ", "
                            << p.window_right << ") i " << i << " j " << j << ": band "
                            << band_visible(l, R, C) << ", rule " << want;
            ++bad;
          }
        }
    }
  return bad;
}

TEST(FlashBandCheck, MatchesStructuralRules) {
  const int64_t kHuge = int64_t{1} << 50;
  const int64_t windows[] = {-1, 0, 1, 7, 64, 130, kHuge};
  const int64_t lens[][2] = {{1, 1},     {5, 300},   {300, 5},   {129, 129},
                             {200, 333}, {333, 200}, {64, 1000}, {1000, 64}};
  const int tiles[][2] = {{64, 128}, {128, 128}, {64, 64}};
  int64_t bad = 0;
  for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
    for (int64_t wl : windows)
      for (int64_t wr : windows)
        for (const auto& len : lens)
          for (const auto& tile : tiles) {
            Params p{};
            p.causal = c;
            p.window_left = wl;
            p.window_right = wr;
            const int64_t sq = len[0], sk = len[1];
            for (int64_t m0 = 0; m0 < sq; m0 += tile[0])
              for (int64_t n0 = 0; n0 < sk; n0 += tile[1])
                bad += check_tile(p, sq, sk, m0, n0, tile[0], tile[1]);
          }
  EXPECT_EQ(bad, 0);
}

// Lengths near 2^31: the tiles around the diagonals where the rules bind, and far from them
// (where band_limits clamps).
TEST(FlashBandCheck, LongSequences) {
  const int64_t big = (int64_t{1} << 31) - 200;
  const int64_t lens[][2] = {{big, big}, {big, 1000}, {1000, big}, {big, big - 12345}};
  int64_t bad = 0;
  for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
    for (int64_t w : {int64_t{-1}, int64_t{100}, int64_t{1} << 40})
      for (const auto& len : lens) {
        Params p{};
        p.causal = c;
        p.window_left = w;
        p.window_right = w < 0 ? -1 : 3;
        const int64_t sq = len[0], sk = len[1], d = sk - sq;
        for (int64_t m0 : {int64_t{0}, int64_t{64}, (sq - 1) / 64 * 64, (sq / 2) / 64 * 64})
          for (int64_t dn : {int64_t{-256}, int64_t{-128}, int64_t{0}, int64_t{128}, d, d - 128}) {
            int64_t n0 = (m0 + dn) / 128 * 128;
            if (n0 < 0) n0 = 0;
            if (n0 >= sk) n0 = (sk - 1) / 128 * 128;
            bad += check_tile(p, sq, sk, m0, n0, 64, 128);
          }
      }
  EXPECT_EQ(bad, 0);
}

// DqPerm (ATTNKIT_FLASH_BWD_DQ_PERM): what red_c_perm writes for lane l's element (mt, nt, r, e)
// of warp w's chunk ch is row q_m0 + 16 mt + l / 4 + 8 r, column ch D / chunks + q_n0 + 8 nt +
// 2 (l % 4) + e of the tile (the dQ MMA's C layout); off() must send every (row, 8-column group)
// there, with the 8 columns consecutive, and cover the tile once.
template <int D>
int64_t dq_perm_mismatches() {
  using Tr = BwdFusedTraits<D>;
  using P = DqPerm<D>;
  std::vector<int> owner(Tr::kBM * D, -1);  // tile float -> row * D + column
  for (int ch = 0; ch < Tr::kDqChunks; ++ch)
    for (int w = 0; w < Tr::kWarps; ++w)
      for (int l = 0; l < 32; ++l)
        for (int mt = 0; mt < Tr::kQMT; ++mt)
          for (int nt = 0; nt < Tr::kQNT; ++nt)
            for (int r = 0; r < 2; ++r)
              for (int e = 0; e < 2; ++e) {
                const int row = (w / Tr::kDqWC) * 16 * Tr::kQMT + 16 * mt + l / 4 + 8 * r;
                const int col = ch * (D / Tr::kDqChunks) + (w % Tr::kDqWC) * 8 * Tr::kQNT + 8 * nt +
                                2 * (l % 4) + e;
                const int at = P::warp_off(ch, w) + P::slot(mt, nt, r) * 64 + l * 2 + e;
                if (at < 0 || at >= Tr::kBM * D || owner[at] != -1) return -1;
                owner[at] = row * D + col;
              }
  int64_t bad = 0;
  for (int row = 0; row < Tr::kBM; ++row)
    for (int c = 0; c < D; c += 8)
      for (int k = 0; k < 8; ++k)
        bad += owner[P::off(row, c) + k] != row * D + c + k;
  return bad;
}

TEST(FlashDqPerm, MatchesMmaLayout) {
  EXPECT_EQ(dq_perm_mismatches<64>(), 0);
  EXPECT_EQ(dq_perm_mismatches<96>(), 0);
  EXPECT_EQ(dq_perm_mismatches<128>(), 0);
  EXPECT_EQ(dq_perm_mismatches<192>(), 0);
  EXPECT_EQ(dq_perm_mismatches<256>(), 0);
}

}  // namespace
}  // namespace attnkit::flash
