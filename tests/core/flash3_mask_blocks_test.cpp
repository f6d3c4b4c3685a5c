// flash3's forward tests `nb >= first_masked_block(...)` once per tile instead of the per-block
// mask predicate block_needs_mask (both in src/backends/flash3/mask_blocks.hpp, session 34);
// block_wholly_masked (session 48) says when the causal mask hides a whole block from 64 rows.
// Host-only, so it runs without a GPU: for every key block size the kernels use (2^5..2^7), key
// length, first row and causal offset in a window that crosses every rounding case (negative
// offsets: bottom-right causal with Sk < Sq), the first masked block must be exactly where the
// per-block predicate first holds, and the predicate must hold for every block after it.
#include <gtest/gtest.h>

#include <string>

#include "backends/flash3/mask_blocks.hpp"

namespace attnkit::flash3 {
namespace {

struct Args {  // FwdArgs' three fields that the rule reads
  int seqlen_k, causal, causal_offset;
};

/// The per-block rule, written out here independently of mask_blocks.hpp (the form the kernels ran
/// before session 34).
bool needs_mask(int nb, int bn, int seqlen_k, int causal, int first_row, int causal_offset) {
  return (nb + 1) * bn > seqlen_k || (causal && (nb + 1) * bn - 1 > first_row + causal_offset);
}

template <int kShift>
void check_all() {
  constexpr int bn = 1 << kShift;
  int cases = 0;
  for (int causal = 0; causal <= 1; ++causal)
    for (int seqlen_k = 0; seqlen_k <= 3 * bn + 3; ++seqlen_k)
      for (int first_row = 0; first_row <= 2 * bn + 2; first_row += 1 + (first_row > bn ? 3 : 0))
        for (int off = -3 * bn - 3; off <= 3 * bn + 3; ++off) {
          const int from = first_masked_block<kShift>(Args{seqlen_k, causal, off}, first_row);
          const int blocks = (seqlen_k + bn - 1) / bn + 2;  // past the last block, too
          for (int nb = 0; nb < blocks; ++nb) {
            const bool want = needs_mask(nb, bn, seqlen_k, causal, first_row, off);
            ASSERT_EQ(nb >= from, want)
                << "block " << bn << ", nb " << nb << ", Sk " << seqlen_k << ", causal " << causal
                << ", first_row " << first_row << ", offset " << off << ": first masked " << from;
            ASSERT_EQ(block_needs_mask<bn>(Args{seqlen_k, causal, off}, nb, first_row), want)
                << "block_needs_mask, block " << bn << ", nb " << nb << ", Sk " << seqlen_k
                << ", causal " << causal << ", first_row " << first_row << ", offset " << off;
          }
          ++cases;
        }
  EXPECT_GT(cases, 1000);
}

TEST(Flash3MaskBlocks, FirstMaskedBlockMatchesThePerBlockRule32) {
  check_all<5>();
}
TEST(Flash3MaskBlocks, FirstMaskedBlockMatchesThePerBlockRule64) {
  check_all<6>();
}
TEST(Flash3MaskBlocks, FirstMaskedBlockMatchesThePerBlockRule128) {
  check_all<7>();
}

// block_wholly_masked (mainloop.cuh kVarSkipTurn skips such a block's turn): true
// exactly when causal is on and no row of first_row .. first_row + kRows - 1 sees any key of the
// block by the causal rule (key j visible from row i iff j <= i + offset), checked element by
// element; and such a block is one that block_needs_mask masks (for any Sk).
template <int kBn, int kRows>
void check_wholly_masked() {
  int cases = 0, masked = 0;
  for (int causal = 0; causal <= 1; ++causal)
    for (int first_row = 0; first_row <= 3 * kBn + 2; first_row += 1 + (first_row > kBn ? 5 : 0))
      for (int off = -4 * kBn - 3; off <= 2 * kBn + 3; ++off)
        for (int nb = 0; nb < 8; ++nb) {
          bool any_causal = false;  // some (row, key) pair visible by the causal rule alone
          for (int i = first_row; i < first_row + kRows && !any_causal; ++i)
            for (int j = nb * kBn; j < (nb + 1) * kBn; ++j)
              if (!causal || j <= i + off) {
                any_causal = true;
                break;
              }
          const Args a{8 * kBn, causal, off};
          const bool got = block_wholly_masked<kBn, kRows>(a, nb, first_row);
          ASSERT_EQ(got, !any_causal)
              << "block " << kBn << ", rows " << kRows << ", nb " << nb << ", causal " << causal
              << ", first_row " << first_row << ", offset " << off;
          if (got) {  // such a block is one the kernels mask, under any Sk
            for (int seqlen_k = 0; seqlen_k <= 9 * kBn; seqlen_k += kBn / 2)
              ASSERT_TRUE((block_needs_mask<kBn>(Args{seqlen_k, causal, off}, nb, first_row)));
            ++masked;
          }
          ++cases;
        }
  EXPECT_GT(cases, 1000);
  EXPECT_GT(masked, 100);
}

TEST(Flash3MaskBlocks, WhollyMaskedBlock64Keys64Rows) {  // (the D 256 forward's shape)
  check_wholly_masked<64, 64>();
}

// The D 256 forward's causal tiles with S_q = S_k (offset 0, 128-row m blocks, 64-key blocks):
// warpgroup 0 (rows 128m .. 128m + 63) never sees the tile's last block 2m + 1, warpgroup 1
// (rows 128m + 64 ..) always does, and warpgroup 0 sees block 2m.
TEST(Flash3MaskBlocks, WhollyMaskedFirstTurnOfAlignedCausalTiles) {
  for (int m = 0; m < 64; ++m) {
    const Args a{1 << 20, 1, 0};
    EXPECT_TRUE((block_wholly_masked<64, 64>(a, 2 * m + 1, 128 * m))) << m;
    EXPECT_FALSE((block_wholly_masked<64, 64>(a, 2 * m + 1, 128 * m + 64))) << m;
    EXPECT_FALSE((block_wholly_masked<64, 64>(a, 2 * m, 128 * m))) << m;
  }
}

// A tile whose first row sees no key (causal, offset far left) masks every block (the first
// masked block is <= 0: here floor(-499 / 128) = -4); without causal, only the blocks holding
// keys >= Sk are masked.
TEST(Flash3MaskBlocks, Extremes) {
  EXPECT_EQ(first_masked_block<7>(Args{1000, 1, -500}, 0), -4);
  EXPECT_EQ(first_masked_block<7>(Args{1024, 0, -500}, 0), 8);
  EXPECT_EQ(first_masked_block<7>(Args{1000, 0, 0}, 0), 7);
  EXPECT_EQ(first_masked_block<6>(Args{0, 1, 0}, 0), 0);
}

}  // namespace
}  // namespace attnkit::flash3
