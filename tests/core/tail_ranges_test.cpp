// The forward's split tail: how the key blocks of the tail tiles are dealt to CTAs
// (src/core/tail_ranges.hpp). Host-only, so it runs without a GPU: the ranges
// cover every block once, cta_of inverts begin, pieces / first_cta count what the kernel's loop
// (flash's fwd_tail_kernel, flash3's tail_work_item) visits, and no two pieces of a launch share a
// workspace slot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "core/tail_ranges.hpp"

namespace attnkit {
namespace {

void check(int64_t tiles, int64_t n_blocks, int64_t ctas) {
  SCOPED_TRACE("tiles " + std::to_string(tiles) + " n_blocks " + std::to_string(n_blocks) +
               " ctas " + std::to_string(ctas));
  const TailRanges rg{tiles, n_blocks, ctas};
  ASSERT_GE(rg.blocks(), ctas);  // the launch's rule
  EXPECT_EQ(rg.begin(0), 0);
  EXPECT_EQ(rg.begin(ctas), rg.blocks());
  for (int64_t c = 0; c < ctas; ++c) {
    ASSERT_LT(rg.begin(c), rg.begin(c + 1)) << "CTA " << c << " has an empty range";
    for (int64_t x = rg.begin(c); x < rg.begin(c + 1); ++x)
      ASSERT_EQ(rg.cta_of(x), c) << "block " << x;
  }
  // The kernel's loop: CTA c, every tile its range touches, one piece each.
  std::map<int64_t, std::set<int64_t>> index_of_tile;  // tile -> piece indices seen
  std::map<int64_t, int64_t> blocks_of_tile;
  std::set<int64_t> slots;
  for (int64_t c = 0; c < ctas; ++c) {
    const int64_t lo = rg.begin(c), hi = rg.begin(c + 1);
    for (int64_t j = lo / n_blocks; j * n_blocks < hi; ++j) {
      const int64_t a = std::max(lo, j * n_blocks), b = std::min(hi, j * n_blocks + n_blocks);
      ASSERT_LT(a, b);
      blocks_of_tile[j] += b - a;
      const int64_t i = c - rg.first_cta(j);
      ASSERT_GE(i, 0);
      ASSERT_LT(i, rg.pieces(j));
      EXPECT_TRUE(index_of_tile[j].insert(i).second) << "tile " << j << " piece " << i << " twice";
      // A piece is the whole tile exactly when the tile has one piece.
      EXPECT_EQ(a == j * n_blocks && b == j * n_blocks + n_blocks, rg.pieces(j) == 1);
      if (rg.pieces(j) > 1) {
        const int64_t s = rg.slot(j, i);
        EXPECT_GE(s, 0);
        EXPECT_LT(s, 2 * ctas);
        EXPECT_TRUE(slots.insert(s).second) << "slot " << s << " used twice";
      }
    }
  }
  ASSERT_EQ(static_cast<int64_t>(index_of_tile.size()), tiles);
  for (const auto& [j, idx] : index_of_tile) {
    EXPECT_EQ(static_cast<int64_t>(idx.size()), rg.pieces(j)) << "tile " << j;
    EXPECT_EQ(blocks_of_tile[j], n_blocks) << "tile " << j;
  }
}

TEST(TailRanges, EveryBlockOncePiecesAndSlots) {
  // The BENCHMARKS.md shapes at D = 256 on an H100 (200 tail tiles on 264 slots, S 512 .. 16k)
  // and an H200 (same SM count), then small and awkward ones (the GPU tests' "1:N" shapes).
  for (int64_t nb : {8, 16, 32, 64, 256})
    check(200, nb, 264);
  check(5, 16, 7);
  check(6, 6, 8);
  check(3, 2, 5);
  check(1, 47, 7);
  check(2, 4, 6);
  for (int64_t tiles = 1; tiles <= 12; ++tiles)
    for (int64_t nb = 1; nb <= 12; ++nb)
      for (int64_t ctas = 1; ctas <= tiles * nb && ctas <= 40; ++ctas)
        check(tiles, nb, ctas);
}

}  // namespace
}  // namespace attnkit
