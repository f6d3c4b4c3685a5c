// Counter-based Philox4x32-10 and the project's dropout keep rule. Every backend, forward and
// backward, CPU and GPU, draws its dropout mask from keep_element() below, so they all agree with
// the `math` oracle bit for bit.
//
// Element (b, h, i, j) — b batch (varlen: sequence), h query head, i/j row/column inside that
// sequence — uses counter {j / 4, i, b * Hq + h, lo32(offset)} and key
// {lo32(seed), hi32(seed) + hi32(offset)}; word j % 4 of the output, shifted right by 8, is a
// 24-bit uniform integer u. The element is kept iff u >= threshold, threshold = ceil(p * 2^24)
// computed once on the host (integer comparison: no float rounding differences between devices).
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace attnkit {

struct Philox4 {
  uint32_t x[4];
};

ATTNKIT_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t prod = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(prod >> 32);
  lo = static_cast<uint32_t>(prod);
}

/// Philox4x32 with 10 rounds (Salmon et al., SC'11), the variant cuRAND and PyTorch use.
ATTNKIT_HD Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                 uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(kM0, c0, hi0, lo0);
    philox_mulhilo(kM1, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

/// ceil(p * 2^24) for p in [0, 1); 0 means "no dropout".
inline uint32_t dropout_threshold_for(double p) {
  if (!(p > 0.0)) return 0;
  const double t = p * 16777216.0;
  uint32_t ti = static_cast<uint32_t>(t);
  if (static_cast<double>(ti) < t) ++ti;
  return ti;
}

/// The Philox draw of column group `group` (= j / 4) of row i of sequence-head bh (= b Hq + h):
/// the counter and key of the file comment, in one place for every backend.
ATTNKIT_HD Philox4 dropout_draw(uint32_t group, uint32_t i, uint32_t bh, uint64_t seed,
                                uint64_t offset) {
  return philox4x32_10(group, i, bh, static_cast<uint32_t>(offset), static_cast<uint32_t>(seed),
                       static_cast<uint32_t>(seed >> 32) + static_cast<uint32_t>(offset >> 32));
}

/// Whether a draw's word keeps its element (its 24-bit uniform against the threshold).
ATTNKIT_HD bool dropout_word_keeps(uint32_t word, uint32_t threshold) {
  return (word >> 8) >= threshold;
}

/// The four keep decisions for columns 4*(j/4) .. 4*(j/4)+3 of row (b, h, i): bit w set = kept.
ATTNKIT_HD uint32_t dropout_keep_bits4(uint64_t seed, uint64_t offset, int64_t b, int64_t h,
                                       int64_t heads_q, int64_t i, int64_t j, uint32_t threshold) {
  const Philox4 r = dropout_draw(static_cast<uint32_t>(j >> 2), static_cast<uint32_t>(i),
                                 static_cast<uint32_t>(b * heads_q + h), seed, offset);
  uint32_t bits = 0;
  for (int w = 0; w < 4; ++w)
    bits |= (dropout_word_keeps(r.x[w], threshold) ? 1u : 0u) << w;
  return bits;
}

/// Keep decision for one element (see the file comment).
ATTNKIT_HD bool dropout_keep(uint64_t seed, uint64_t offset, int64_t b, int64_t h, int64_t heads_q,
                             int64_t i, int64_t j, uint32_t threshold) {
  return (dropout_keep_bits4(seed, offset, b, h, heads_q, i, j, threshold) >> (j & 3)) & 1u;
}

}  // namespace attnkit
