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
// therefore uses the static schedule for causal only up to 32 m blocks (launch.cuh).
//
// Dynamic schedule (args.tile_counter != null): CTA c starts with tile c; afterwards its
// producer thread takes the next tile index from a global atomic counter (zeroed on the stream
// before the launch) and hands it to the consumer warpgroups through a 2-slot ring in shared
// memory (SchedSlots: full barrier = the producer's arrival, empty barrier = lane 0 of every
// consumer warp). Same tile order as above (m fastest, causal m reversed): CTAs stay on one
// (b, h) together (K/V shared in L2) and, within it, take the longest causal rows first; a CTA
// that finishes early simply takes the next tile, so imbalance is at most one tile at the end.
// The producer fetches tile t+1's index before loading tile t, hiding the atomic's latency.
#pragma once

#include <cstdint>

#include "backends/flash3/fwd_args.hpp"
#include "cuda/ptx_sm90.hpp"

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

/// Static schedule: the k-th tile of this CTA, or -1 when it has no more.
__device__ __forceinline__ int static_tile(const FwdArgs& a, int k) {
  return k < num_rounds(a) ? tile_of_round(a, k) : -1;
}

/// Dynamic schedule hand-over, producer thread -> consumer warpgroups (2 slots).
struct SchedSlots {
  int* tile;        // [2]
  uint64_t* full;   // [2], count 1
  uint64_t* empty;  // [2], count = consumer warps
  /// Producer: publishes its k-th tile (-1 = no more) once slot k % 2 is free.
  __device__ __forceinline__ void put(int k, int t) const {
    namespace ptx = attnkit::cuda::sm90;
    ptx::mbar_wait(&empty[k & 1], ((k >> 1) & 1) ^ 1);
    tile[k & 1] = t;
    ptx::mbar_arrive(&full[k & 1]);  // release: the store above is visible to the waiters
  }
  /// Consumer warp: its k-th tile; the warp's lane 0 frees the slot after every lane read it.
  __device__ __forceinline__ int get(int k, int lane) const {
    namespace ptx = attnkit::cuda::sm90;
    ptx::mbar_wait(&full[k & 1], (k >> 1) & 1);
    const int t = *static_cast<volatile int*>(&tile[k & 1]);
    __syncwarp();
    if (lane == 0) ptx::mbar_arrive(&empty[k & 1]);
    return t;
  }
};

__device__ __forceinline__ Tile decode_tile(const FwdArgs& a, int t) {
  const int m = t % a.num_m_blocks, hb = t / a.num_m_blocks;
  Tile tile;
  tile.m_block = a.causal ? a.num_m_blocks - 1 - m : m;
  tile.h = hb % a.heads_q;
  tile.b = hb / a.heads_q;
  return tile;
}

}  // namespace attnkit::flash3
