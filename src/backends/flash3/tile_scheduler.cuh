// Static persistent tile scheduler: grid = min(#tiles, #SMs) CTAs (G); a tile = 128 query rows
// of one (b, h). Persistence lets the producer load tile t+1's Q and K/V while the consumers
// finish tile t's epilogue (v1, one CTA per tile, lost that time at every tile: 0.62-0.83x
// cuDNN at S <= 1k; v2 persistent: +8 % at D = 128, S = 1k, +7 % at D = 64, S = 2k).
//
// Order: t -> (m fastest, then h, then b), causal m reversed (long rows first). m fastest keeps
// the CTAs running together on one (b, h), so its K/V is read from HBM once and shared in L2.
// (Tried in run 3: LPT order with m slowest for causal. Balanced, but concurrent tiles then sit
// on ~132 different heads: K/V reuse drops and short-S causal becomes memory-bound: D = 128,
// S = 2k causal fell from 429 to 336 TFLOP/s.)
// Causal work grows with m, and a plain stride of G over that order gives each CTA a cluster of
// m values (G = 132 = 4 mod 128 at S = 16k: 3x imbalance, 401 vs 574 TFLOP/s non-persistent,
// run 2). So causal rounds alternate direction (zig-zag): CTA c takes t = rG + c in even rounds
// and rG + G-1-c in odd ones, pairing long tiles with short ones when G is close to a multiple
// of the m-block count. It is not in general (S = 16k: (263 - c) mod 128 pairs m = 64 with
// m = 71), so the imbalance stays for long causal rows with few rounds per CTA: measured run 4
// (H200) D = 128, S = 16k 437 zig-zag vs 575 one CTA per tile, but S = 1k 395 vs 346. The launch
// therefore uses persistence for causal only up to 32 m blocks (launch.cuh). A dynamic
// scheduler (atomic tile counter, FA3-style) would remove this split; not done yet.
#pragma once

#include "backends/flash3/fwd_args.hpp"

namespace attnkit::flash3 {

struct Tile {
  int m_block, h, b;
};

/// Number of rounds of G = gridDim.x tiles (the last one may be partial).
__device__ __forceinline__ int num_rounds(const FwdArgs& a) {
  return (a.num_tiles + gridDim.x - 1) / gridDim.x;
}

/// Tile index of this CTA in round r, or -1 when the partial last round has none for it.
__device__ __forceinline__ int tile_of_round(const FwdArgs& a, int r) {
  const int g = gridDim.x;
  const int c = a.causal && (r & 1) ? g - 1 - static_cast<int>(blockIdx.x) : blockIdx.x;
  const int t = r * g + c;
  return t < a.num_tiles ? t : -1;
}

__device__ __forceinline__ Tile decode_tile(const FwdArgs& a, int t) {
  const int m = t % a.num_m_blocks, hb = t / a.num_m_blocks;
  Tile tile;
  tile.m_block = a.causal ? a.num_m_blocks - 1 - m : m;
  tile.h = hb % a.heads_q;
  tile.b = hb / a.heads_q;
  return tile;
}

}  // namespace attnkit::flash3
