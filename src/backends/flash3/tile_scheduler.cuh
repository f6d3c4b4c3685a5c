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
// producer warp takes the next tile index from a global atomic counter (zeroed on the stream
// before the launch) once the current tile's loads are issued, and hands it to the consumer
// warpgroups through shared memory (SchedSlot). Same tile order as above (m fastest, causal m
// reversed): CTAs stay on one (b, h) together (K/V shared in L2) and, within it, take the
// longest causal rows first; a CTA that finishes early simply takes the next tile.
#pragma once

#include <cstdint>

#include "backends/flash3/fwd_args.hpp"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

struct Tile {
  int m_block, h, b;
};

/// Division without a divide (mainloop.cuh kVarTileDiet): n / d for 0 <= n < 2^31, 1 <= d < 2^31
/// as (umulhi(n, mul) + n) >> shift, with shift = ceil(log2 d) and
/// mul = floor(2^32 (2^shift - d) / d) + 1 (the round-up multiplier 2^32 + mul; umulhi(n, mul) <
/// n < 2^31, so the sum does not wrap). The launch precomputes mul / shift for num_m_blocks,
/// heads_q and the grid size (FwdArgs); decode_tile's signed divisions cost ~25 instructions each
/// in the SASS, this one 3. Checked exhaustively for small n and d and on random pairs
/// (flash3_forward_test).
struct FastDiv {
  uint32_t mul;
  int shift;
};
inline FastDiv make_fast_div(int d) {
  int l = 0;
  while ((int64_t{1} << l) < d)
    ++l;
  const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << l) - static_cast<uint64_t>(d))) /
                         static_cast<uint64_t>(d) +
                     1;
  return {static_cast<uint32_t>(m), l};
}
__host__ __device__ __forceinline__ int fast_div(int n, uint32_t mul, int shift) {
  const uint32_t u = static_cast<uint32_t>(n);
#if defined(__CUDA_ARCH__)
  const uint32_t hi = __umulhi(u, mul);
#else
  const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(u) * mul) >> 32);
#endif
  return static_cast<int>((hi + u) >> shift);
}

/// Tile index of this CTA in round r, or -1 when the partial last round has none for it.
/// a.rotate (session 13): CTA c takes tile r G + (c + r) mod G, so that a CTA's m block moves by
/// one per round. Without it, when G is a multiple of the m-block count (D = 64, 192-row tiles:
/// 6 m blocks at S_q = 1024, 22 at 4096, and G = 132 on an H100), CTA c gets m = c mod num_m_blocks
/// in every round: the CTAs holding a head's partial last tile (64 of 192 rows at S_q = 1024)
/// get only those, finish early and sit idle while the others run full tiles (clock64 trace,
/// bench/gpu/flash3_tile_trace.py: 16.5k vs 24.7k cycles per tile at S 1k, so S_q = 1024 took as
/// long as 1152). Rotated, every CTA holds its share of partial tiles. The tiles of round r are
/// the same set (the CTAs still run through the heads together); only who takes which changes.
__device__ __forceinline__ int tile_of_round(const FwdArgs& a, int r) {
  const int g = gridDim.x;
  int c = a.causal && (r & 1) ? g - 1 - static_cast<int>(blockIdx.x) : blockIdx.x;
  if (a.rotate) {
    const int x = c + r;  // (c + r) mod g without a division
    c = x - g * fast_div(x, a.g_div_mul, a.g_div_shift);
  }
  const int t = r * g + c;
  return t < a.num_tiles ? t : -1;
}

/// Static schedule: the k-th tile of this CTA, or -1 when it has no more. Rounds: the launch's
/// FwdArgs::num_rounds (ceil(num_tiles / grid), or a split tail's launch 1 the full rounds, at
/// D = 256 past Sk 4096 too: tail.cuh). Session 46 (Tuning::lpt_schedule, lpt_schedule.hpp):
/// with FwdArgs::sched_table, the launch's table [num_rounds][grid] instead of the rounds (one
/// 4-byte load from L2). kTable = false: kernels that never get a table (score mods, varlen,
/// masks, the cluster: launch.cuh sets one only in launch_forward's causal non-cluster launches)
/// keep the rounds alone.
template <bool kTable = true>
__device__ __forceinline__ int static_tile(const FwdArgs& a, int k) {
  if (k >= a.num_rounds) return -1;
  if (kTable && a.sched_table != nullptr) return __ldg(a.sched_table + k * gridDim.x + blockIdx.x);
  return tile_of_round(a, k);
}

/// Dynamic schedule hand-over, producer warp -> consumer warpgroups: one int in shared memory
/// and two named barriers (kBarFull: the producer warp arrives after writing, the consumers
/// sync before reading; kBarEmpty: the consumers arrive after reading, the producer warp syncs
/// before the next write). Each barrier alternates strictly between its two sides, so an
/// arrival can never count towards the wrong round. The final -1 is not acknowledged (nobody
/// waits for it), which leaves no barrier half-arrived at exit.
/// With one int (sessions 2-21) compute-sanitizer racecheck reported the slot's read
/// (consumers, round k) against its next write (producer, round k+1) as a hazard, both with
/// that version and with a first one that used mbarrier slots (runs 5 and 6): the only edge between
/// them is consumer arrive -> producer sync, which racecheck apparently does not treat as ordering
/// (it accepts sync-sync). Every edge in both directions is an arrive -> sync on a strictly
/// alternating barrier, plus a membar.cta before each arrival (added after run 6). Session 21 / 22:
/// the k-th tile goes to slot k % kSchedSlots of a ring, so a slot is written once per kSchedSlots
/// tiles of a CTA instead of once per tile: below that many tiles per CTA no slot is ever
/// rewritten, and the read / next-write pair racecheck reported cannot occur (session 22 call 1,
/// H100: racecheck 0 hazards on the sanitizer subset, whose dynamic cases run <= 2 tiles per CTA).
/// The barriers' protocol is unchanged and still orders every round when the ring wraps (tested
/// with 150 tiles per CTA: the "sched_dyn ... _g2" case, which racecheck also passed with 0 hazards
/// in session 22 call 2; it is in the sanitizer subset).
inline constexpr int kSchedSlots = 128;
struct SchedSlot {
  static constexpr int kBarFull = 4;  // 1 .. 3: ping-pong
  static constexpr int kBarEmpty = 5;
  int* tile;    // [kSchedSlots]
  int threads;  // producer warp + consumer threads
  /// Producer warp: publishes its k-th tile (-1 = no more).
  __device__ __forceinline__ void put(int k, int t, int lane) const {
    namespace ptx = attnkit::cuda::sm90;
    if (k > 0) ptx::named_bar_sync(kBarEmpty, threads);
    if (lane == 0) static_cast<volatile int*>(tile)[k % kSchedSlots] = t;
    __threadfence_block();  // the store is performed before the arrival (see get())
    ptx::named_bar_arrive(kBarFull, threads);
  }
  /// Consumer thread: its k-th tile (-1 = no more).
  __device__ __forceinline__ int get(int k) const {
    namespace ptx = attnkit::cuda::sm90;
    ptx::named_bar_sync(kBarFull, threads);
    const int t = static_cast<volatile int*>(tile)[k % kSchedSlots];
    // The load is performed before the arrival that lets the producer overwrite the slot
    // (bar.arrive itself is only documented to order for the barrier's completion; the
    // membar.cta makes the read-before-overwrite order explicit).
    __threadfence_block();
    if (t >= 0) ptx::named_bar_arrive(kBarEmpty, threads);
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

/// decode_tile with FwdArgs' precomputed divisors (kVarTileDiet); t >= 0.
__host__ __device__ __forceinline__ Tile decode_tile_fast(const FwdArgs& a, int t) {
  const int hb = fast_div(t, a.m_div_mul, a.m_div_shift);
  const int m = t - hb * a.num_m_blocks;
  const int b = fast_div(hb, a.h_div_mul, a.h_div_shift);
  Tile tile;
  tile.m_block = a.causal ? a.num_m_blocks - 1 - m : m;
  tile.h = hb - b * a.heads_q;
  tile.b = b;
  return tile;
}

/// A tile's decode with (kFast: kVarTileDiet) or without the precomputed divisors. (The static
/// schedule, static_tile, is one for every kernel since session 20: it reads the launch's rounds.)
template <bool kFast>
__device__ __forceinline__ Tile decode_tile_of(const FwdArgs& a, int t) {
  return kFast ? decode_tile_fast(a, t) : decode_tile(a, t);
}

/// Number of K/V tiles a CTA visits (tiles 0 .. n-1; all of them are visited from the last).
/// (Host too: the launch sizes lpt_schedule.hpp's table with it.)
template <class Tr>
__host__ __device__ __forceinline__ int num_n_blocks(const FwdArgs& a, int m_block) {
  const int total = (a.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN;
  if (!a.causal) return total;
  int last_row = (m_block + 1) * Tr::kBlockM;
  if (last_row > a.seqlen_q) last_row = a.seqlen_q;
  const int max_key = last_row - 1 + a.causal_offset;  // last visible key of the last row
  if (max_key < 0) return 0;
  const int n = max_key / Tr::kBlockN + 1;
  return n < total ? n : total;
}

/// kVarScoreMod (session 23): the first K/V block a tile visits, 0 unless the sliding window has
/// a left edge (FwdArgs::window_lo): the block of the first visible key of the tile's first row,
/// whose left edge is the lowest of the tile. The tile visits blocks first_n_block ..
/// num_n_blocks - 1 (none when that is empty: every row of the tile then has no visible key).
template <class Tr>
__device__ __forceinline__ int first_n_block(const FwdArgs& a, int m_block) {
  if (!a.window_lo) return 0;
  const int min_key = m_block * Tr::kBlockM + a.lo_offset;  // (|lo_offset| <= max(Sq, Sk))
  return min_key <= 0 ? 0 : min_key / Tr::kBlockN;
}

}  // namespace attnkit::flash3
