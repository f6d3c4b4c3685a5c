// Which K/V blocks of a flash3 forward tile need the mask (session 34's tile-boundary diet). The
// functions the device runs (mainloop.cuh, score_mod.cuh) and the host test checks
// (tests/core/flash3_mask_blocks_test.cpp), so the test checks the rule the kernels run.
#pragma once

#include "core/hd.hpp"

namespace attnkit::flash3 {

/// Whether K/V block nb (keys nb kBlockN .. (nb + 1) kBlockN - 1) needs the mask for a warpgroup
/// whose first row is first_row: it holds keys >= a.seqlen_k or, a.causal != 0, keys right of
/// that row's diagonal (first_row + a.causal_offset). The per-block form of the rule below, for
/// the kernels that test it per block (and for the 176-key tile, not a power of two).
template <int kBlockN, class Args>
ATTNKIT_HD bool block_needs_mask(const Args& a, int nb, int first_row) {
  return (nb + 1) * kBlockN > a.seqlen_k ||
         (a.causal && (nb + 1) * kBlockN - 1 > first_row + a.causal_offset);
}

/// Whether the causal mask alone hides every key of block nb (keys nb kBlockN .. (nb + 1) kBlockN
/// - 1) from every one of kRows rows first_row .. first_row + kRows - 1 (a consumer warpgroup's
/// 64 rows): its first key lies right of the last row's diagonal, nb kBlockN > first_row + kRows
/// - 1 + a.causal_offset (mask_tile's rule: key j is visible from row i iff j < seqlen_k and j <=
/// i + causal_offset). Such a block's scores are all -inf and its P all 0 (mainloop.cuh
/// kVarSkipTurn skips it). A sufficient condition only: keys >= seqlen_k
/// are not considered (a tile's last block always holds keys < seqlen_k). Rows >= seqlen_q
/// count like the others (the kernels mask them by the same rule).
template <int kBlockN, int kRows, class Args>
ATTNKIT_HD bool block_wholly_masked(const Args& a, int nb, int first_row) {
  return a.causal && nb * kBlockN > first_row + (kRows - 1) + a.causal_offset;
}

/// The first K/V block nb (keys nb 2^kShift .. (nb + 1) 2^kShift - 1) that needs the mask: it
/// holds keys >= a.seqlen_k or, a.causal != 0, keys right of the diagonal of the warpgroup's
/// first row, (nb + 1) 2^kShift - 1 > first_row + a.causal_offset. Every later block needs it
/// too, so a tile tests `nb >= first_masked_block(...)` instead of that predicate per block.
/// Floor divisions as arithmetic shifts (first_row + causal_offset may be < 0: bottom-right
/// causal with Sk < Sq; the result is then <= 0 when the row sees no key: every block is
/// masked); seqlen_k >= 0. Args: FwdArgs on the device (its fields read in this order: the
/// kernels' SASS is the one measured), any struct with the three fields on the host.
template <int kShift, class Args>
ATTNKIT_HD int first_masked_block(const Args& a, int first_row) {
  const int from_k = a.seqlen_k >> kShift;
  const int from_diag = (first_row + a.causal_offset + 1) >> kShift;
  return a.causal && from_diag < from_k ? from_diag : from_k;
}

}  // namespace attnkit::flash3
