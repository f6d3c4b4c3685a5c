// Which K/V blocks of a flash3 forward tile need the mask (session 34's tile-boundary diet). One
// function for the device (mainloop.cuh Consumer::mask_from) and the host test
// (tests/core/flash3_mask_blocks_test.cpp), so the test checks the rule the kernels run.
#pragma once

#include "core/hd.hpp"

namespace attnkit::flash3 {

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
