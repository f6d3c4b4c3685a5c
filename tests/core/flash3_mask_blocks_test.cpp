// flash3's forward tests `nb >= first_masked_block(...)` once per tile instead of the per-block
// mask predicate block_needs_mask (both in src/backends/flash3/mask_blocks.hpp, session 34).
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
