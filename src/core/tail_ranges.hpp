// A forward's split tail (flash: backends/flash/fwd_tail.cuh; flash3: backends/flash3/
// tail.cuh): how the key blocks of the last `tiles` query tiles are dealt out to `ctas` CTAs.
// Host and device code (the host unit test, tests/core/tail_ranges_test.cpp, checks every rule
// below).
//
// The tail's W = tiles * n_blocks key blocks are numbered tile by tile (block x is block
// x % n_blocks of tail tile x / n_blocks); CTA c takes the contiguous range [begin(c), begin(c +
// 1)) with begin(c) = floor(c W / ctas). The launch keeps W >= ctas, so every range is non-empty (W
// / ctas >= 1). A tile whose blocks fall in one range is whole; one cut by range boundaries is
// split into pieces, one per CTA that holds part of it, numbered 0.. from its lowest CTA.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace attnkit {

struct TailRanges {
  int64_t tiles = 0;     // query tiles in the split tail
  int64_t n_blocks = 0;  // key blocks per tile (non-causal: every tile the same)
  int64_t ctas = 0;      // CTAs the blocks are dealt to

  ATTNKIT_HD int64_t blocks() const { return tiles * n_blocks; }
  /// First block of CTA c's range (c = ctas: the end, W).
  ATTNKIT_HD int64_t begin(int64_t c) const { return c * blocks() / ctas; }
  /// The CTA whose range holds block x: the largest c with begin(c) <= x, i.e.
  /// c W < (x + 1) ctas, c = ceil((x + 1) ctas / W) - 1.
  ATTNKIT_HD int64_t cta_of(int64_t x) const {
    return ((x + 1) * ctas + blocks() - 1) / blocks() - 1;
  }
  /// CTAs holding part of tail tile j: first_cta(j) .. first_cta(j) + pieces(j) - 1.
  ATTNKIT_HD int64_t first_cta(int64_t j) const { return cta_of(j * n_blocks); }
  ATTNKIT_HD int64_t pieces(int64_t j) const {
    return cta_of(j * n_blocks + n_blocks - 1) - first_cta(j) + 1;
  }
  /// Workspace slot of piece i of tile j (2 per CTA): a CTA's range can end inside one split
  /// tile (the lowest piece of that tile: slot 2 c + 1) and begin inside another (any other
  /// piece: slot 2 c), never more, so no two pieces share a slot.
  ATTNKIT_HD int64_t slot(int64_t j, int64_t i) const {
    return 2 * (first_cta(j) + i) + (i == 0 ? 1 : 0);
  }
};

}  // namespace attnkit
