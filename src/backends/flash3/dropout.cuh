// kVarDropout (session 39): dropout on one 64 x kBlockN tile of P in the wgmma accumulator layout
// (softmax.cuh: s[4*j + 2*r + e] is row row0 + 8*r, column n0 + 8*j + 2*(lane%4) + e), after the
// online softmax took its row sums (the sums and lse are the undropped ones) and before P is
// packed for P V: a kept element is scaled by 1 / (1 - p), a dropped one is 0.
//
// The keep decisions are core/philox.hpp's, so they equal every other backend's and the oracle's:
// element (b, h, i, j) keeps iff word j % 4 of Philox4x32-10(counter {j / 4, i, b Hq + h,
// lo(offset)}, key {lo(seed), hi(seed) + hi(offset)}), shifted right by 8, is >= the threshold.
//
// One Philox call covers 4 columns of a row. A thread holds 2 columns of each group of 4, its
// lane partner (lane ^ 1) the other 2 of the same group and rows: so each thread draws the groups
// of one of the two rows (the even lane row0, the odd one row0 + 8), keeps the 2 decisions it
// needs, and hands the partner's 2 over in one shuffle per tile (2 bits per column group of 8,
// kBlockN / 8 <= 16 groups in 32 bits). kBlockN / 8 Philox calls per thread and tile: 16 at
// D 64 / 128, 8 at D 256 (~10 x (2 IMAD.WIDE + 2 LOP3) each).
#pragma once

#include <cstdint>

#include "backends/flash3/fwd_args.hpp"
#include "core/philox.hpp"

namespace attnkit::flash3 {

/// Keep bits of this thread's elements of one tile: bit 2j + e of rows[r] keeps s[4j + 2r + e].
/// bh = b * Hq + h (the tile's batch and query head).
template <int kBlockN>
__device__ __forceinline__ void dropout_keep_bits(const FwdArgs& a, int n0, int row0, int lane,
                                                  uint32_t bh, uint32_t (&rows)[2]) {
  static_assert(kBlockN % 8 == 0 && kBlockN / 8 <= 16, "2 bits per column group in 32 bits");
  const int mine_r = lane & 1;
  const uint32_t i = static_cast<uint32_t>(row0 + 8 * mine_r);
  const uint32_t g0 = static_cast<uint32_t>(n0 + 2 * (lane & 3)) >> 2;
  uint32_t mine = 0, theirs = 0;
  // 2 draws at a time: fully unrolled (16 at D 128) ptxas spilled 244 bytes in the D 128 kernel,
  // unrolled by 1, 2 or 4 it spills 92 (the mask build alone: 88; CUDA 13.0, -Xptxas -v).
#pragma unroll 2
  for (int j = 0; j < kBlockN / 8; ++j) {
    const Philox4 r = dropout_draw(g0 + 2 * j, i, bh, a.drop_seed, a.drop_offset);
    uint32_t b4 = 0;
#pragma unroll
    for (int w = 0; w < 4; ++w)
      b4 |= (dropout_word_keeps(r.x[w], a.drop_threshold) ? 1u : 0u) << w;
    // Words 2 (lane & 1) + e are this thread's columns: the even lane's 0, 1, the odd one's 2, 3.
    mine |= ((b4 >> (2 * mine_r)) & 3u) << (2 * j);
    theirs |= ((b4 >> (2 - 2 * mine_r)) & 3u) << (2 * j);
  }
  const uint32_t other = __shfl_xor_sync(0xffffffffu, theirs, 1);
  rows[0] = mine_r ? other : mine;
  rows[1] = mine_r ? mine : other;
}

/// s (P, fp32) *= keep ? 1 / (1 - p) : 0 for key block n0 .. n0 + kBlockN - 1.
template <int kBlockN>
__device__ __forceinline__ void dropout_tile(float (&s)[kBlockN / 2], const FwdArgs& a, int n0,
                                             int row0, int lane, uint32_t bh) {
  uint32_t rows[2];
  dropout_keep_bits<kBlockN>(a, n0, row0, lane, bh, rows);
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[4 * j + 2 * r + e];
        x *= ((rows[r] >> (2 * j + e)) & 1u) ? a.drop_rescale : 0.f;
      }
}

/// The backward's keep bits (bwd_kernel.cuh kModDropout, kJ = 8: BM 64; bwd_kernel_d256.cuh kMod,
/// kJ = 4: a WG's 32 query columns): a thread holds P^T elements (key key_r0 + 8 r, query
/// q0 + 8 j + e), j < kJ, r, e < 2 (q0 = the item's first row + the thread's query column offset).
/// The 4 keys of a Philox group are one row of each of the lanes lane % 16 + 4 t, t < 4 (word t =
/// (lane / 4) % 4); those 4 lanes share the queries. Lane t draws the kJ groups of its (r, e) = (t
/// / 2, t % 2) for every j, keeps word w's decisions of all kJ as byte w of one register, and three
/// shuffles hand each lane byte t of every other lane's. Returned: element (j, r, e) kept iff bit 8
/// (2 r + e) + j is set. kJ Philox draws per thread and item (a quarter of one per element).
template <int kJ>
__device__ __forceinline__ uint32_t bwd_dropout_keep_bits(uint64_t seed, uint64_t offset,
                                                          uint32_t threshold, uint32_t bh,
                                                          int key_r0, int q0, int lane) {
  static_assert(kJ >= 1 && kJ <= 8, "a byte per word");
  const int t = (lane >> 2) & 3, r = t >> 1, e = t & 1;
  const uint32_t group = static_cast<uint32_t>(key_r0 + 8 * r) >> 2;
  uint32_t packed = 0;  // bit 8 w + j: word w of draw j
#pragma unroll 2
  for (int j = 0; j < kJ; ++j) {
    const Philox4 o = dropout_draw(group, static_cast<uint32_t>(q0 + 8 * j + e), bh, seed, offset);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      packed |= (dropout_word_keeps(o.x[w], threshold) ? 1u : 0u) << (8 * w + j);
  }
  uint32_t keep = 0;
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    const uint32_t src = x == 0 ? packed : __shfl_xor_sync(0xffffffffu, packed, 4 * x);
    keep |= ((src >> (8 * t)) & 0xffu) << (8 * (t ^ x));  // lane t ^ x drew (r, e) = t ^ x
  }
  return keep;
}

}  // namespace attnkit::flash3
