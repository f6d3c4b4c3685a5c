// The flash3 forward's split tail (session 19; launch.cuh launch_forward, kernel.cuh kVarTail).
//
// Why: every BENCHMARKS.md shape has 2048 tiles of 128 query rows at D = 128, 15.5 rounds of the
// H100's 132 persistent CTAs, so the last round runs 68 tiles and leaves 64 SMs idle for a whole
// tile time. bench/gpu/flash3_wave_probe.py (session 17) timed a nearby shape whose tile count
// fills every round: +2.5..+3 % more TFLOP/s at D = 128, and cuDNN pays the same. At D = 256
// (session 20) 1024 tiles of 128 rows run 7.76 rounds, 100 tiles in the last: the same split
// (consume_tile_simple's pieces) measured +1.4..+2.7 % at 8k / 16k.
//
// How: launch 1 is the usual kernel, capped at the full rounds (FwdArgs::num_rounds). Its CTAs
// run griddepcontrol.launch_dependents at their start, so launch 2, a programmatic dependent
// launch of the tail kernel, takes each SM as launch 1 leaves it. Launch 2 deals the key blocks
// of the tail's tiles (every tile the same count: non-causal) out to its CTAs in contiguous
// ranges (core/tail_ranges.hpp); each CTA runs one piece per tile its range touches, as the
// mainloop runs a tile (blocks lo .. lo + n - 1, visited from the last). A piece that is a
// whole tile ends with the usual epilogue. Each consumer warp of a piece of a cut tile stores
// its normalised O and lse (fp32, the accumulator's register layout) in its workspace slot and
// counts itself on the (tile, warp) counter; the warp that arrives last merges every piece of
// those 16 rows in piece order (so the output does not depend on the arrival order), writes O
// and lse, and sets the counter back to 0. No CTA waits on another. The tail kernel ends with
// griddepcontrol.wait, so that the stream's next work sees launch 1's rows too.
// The merge is a separate kernel instance's code: launch 1 runs exactly the kernel it ran before
// (session 17's one-kernel version, wip/f3tail17, cost the D = 128 turn loop 13 SASS).
#pragma once

#include <cmath>
#include <cstdint>

#include "backends/flash3/epilogue.cuh"
#include "backends/flash3/fwd_args.hpp"
#include "backends/flash3/reg_ops.cuh"

namespace attnkit::flash3 {

/// fp32 words per lane of a consumer warp's slot: its kD / 2 accumulator values (normalised),
/// then the lse of its two rows (natural log, as store_output writes it).
template <int kD>
inline constexpr int kTailWords = kD / 2 + 2;

/// The k-th piece of this CTA in the tail kernel: tile t (-1: no more), its key blocks lo ..
/// lo + n - 1; tail tile j = t - tail_first is cut into `pieces` pieces, this one `index`
/// (pieces = 1: the whole tile).
struct TailPiece {
  int t = -1;
  int lo = 0, n = 0;
  int j = 0, index = 0, pieces = 1;
};

/// TailRanges' begin / cta_of in 32-bit unsigned arithmetic (the launch keeps W * ctas < 2^31):
/// a 64-bit division is a called subroutine of ~70 instructions, and the six per piece cost
/// the tail kernel ~1 us before its first load (session 19 trace).
__device__ __forceinline__ int tail_begin32(const TailRanges& rg, int c) {
  return static_cast<int>(static_cast<uint32_t>(c) * static_cast<uint32_t>(rg.blocks()) /
                          static_cast<uint32_t>(rg.ctas));
}
__device__ __forceinline__ int tail_cta_of32(const TailRanges& rg, int x) {
  const uint32_t w = static_cast<uint32_t>(rg.blocks());
  return static_cast<int>((static_cast<uint32_t>(x + 1) * static_cast<uint32_t>(rg.ctas) + w - 1) /
                          w) -
         1;
}

__device__ __forceinline__ TailPiece tail_piece(const FwdArgs& a, int k) {
  const TailRanges& rg = a.tail;
  const int c = blockIdx.x, nb = static_cast<int>(rg.n_blocks);
  const int lo = tail_begin32(rg, c), hi = tail_begin32(rg, c + 1), j = lo / nb + k;
  TailPiece w;
  if (j * nb >= hi) return w;
  const int first = j * nb;
  const int c0 = tail_cta_of32(rg, first);
  w.t = a.tail_first + j;
  w.lo = (lo > first ? lo : first) - first;
  w.n = (hi < first + nb ? hi : first + nb) - first - w.lo;
  w.j = j;
  w.pieces = tail_cta_of32(rg, first + nb - 1) - c0 + 1;
  w.index = c - c0;
  return w;
}

/// Word `word` of this lane in slot `slot` for consumer warp `cw` (of kWarps): the 32 lanes of a
/// warp store 32 consecutive floats (coalesced).
template <int kD, int kWarps>
__device__ __forceinline__ float* tail_word(const FwdArgs& a, int slot, int cw, int word,
                                            int lane) {
  return a.tail_ws + ((static_cast<int64_t>(slot) * kWarps + cw) * kTailWords<kD> + word) * 32 +
         lane;
}

/// The last piece's warp: every piece of tail tile pc.j for consumer warp cw (its 16 rows,
/// row0 / row0 + 8 this lane's), merged in piece order, to out and lse through the tile
/// epilogue's store_output (rows past seqlen_q are not written).
/// Latency-bound (session 19 trace: the first version took ~10 us from the last piece's return
/// to its end): the lse of kGroup pieces are loaded before the first is used, and each piece's
/// values with independent loads (about one L2 round trip per group, then one per piece).
template <int kD, int kWarps, bool BF16>
__device__ __forceinline__ void merge_tail_pieces(const FwdArgs& a, const TailPiece& pc, int cw,
                                                  int lane, int b, int h, int row0) {
  constexpr int kVals = kD / 2, kGroup = 4;
  const int c0 = blockIdx.x - pc.index;  // the tile's first CTA (TailRanges::slot's first_cta)
  auto slot_of = [&](int i) { return 2 * (c0 + i) + (i == 0 ? 1 : 0); };
  // Pass 1: the largest lse of each row.
  float mx[2] = {-INFINITY, -INFINITY};
  for (int g = 0; g < pc.pieces; g += kGroup) {
    float l[kGroup][2];
#pragma unroll
    for (int u = 0; u < kGroup; ++u)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        l[u][r] = g + u < pc.pieces
                      ? __ldcg(tail_word<kD, kWarps>(a, slot_of(g + u), cw, kVals + r, lane))
                      : -INFINITY;
#pragma unroll
    for (int u = 0; u < kGroup; ++u)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        mx[r] = fmaxf(mx[r], l[u][r]);
  }
  // Pass 2: O = sum_i exp(lse_i - mx) O_i, den = sum_i exp(lse_i - mx), in piece order. (A row
  // that saw no key in any piece has mx = -inf: weight 0, O 0, lse -inf; non-causal pieces
  // always see one, kept exact anyway.)
  float acc[kVals], den[2] = {0.f, 0.f};
#pragma unroll
  for (int v = 0; v < kVals; ++v)
    acc[v] = 0.f;
  for (int g = 0; g < pc.pieces; g += kGroup) {
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      if (g + u >= pc.pieces) break;
      const float* src = tail_word<kD, kWarps>(a, slot_of(g + u), cw, 0, lane);
      float wt[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float l = __ldcg(src + 32 * (kVals + r));
        wt[r] = mx[r] == -INFINITY ? 0.f : expf(l - mx[r]);
        den[r] += wt[r];
      }
#pragma unroll
      for (int v = 0; v < kVals; ++v)  // (value v belongs to row (v >> 1) & 1, reg_ops.cuh)
        acc[v] = fmaf(wt[(v >> 1) & 1], __ldcg(src + 32 * v), acc[v]);
    }
  }
  float inv[2], lse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    inv[r] = den[r] > 0.f ? 1.f / den[r] : 0.f;
    lse[r] = den[r] > 0.f ? mx[r] + logf(den[r]) : -INFINITY;
  }
  store_output<kD, BF16>(a, acc, inv, lse, b, h, row0, lane);  // (all 32 lanes: uniform call)
}

/// The epilogue of consumer warp cw for a piece of a cut tile (pc.pieces > 1), in place of
/// store_output: o (unnormalised), inv / lse from OnlineSoftmax::finalize. All 32 lanes.
/// Ordering: the warp's slot stores, __syncwarp, then lane 0's fence.acq_rel.gpu and atomic add
/// (the CUTLASS semaphore's order: one fence per warp instead of a fence.sc per lane); the last
/// piece's lane 0 has acquired with the same fence, and __syncwarp passes that on to its lanes'
/// loads.
template <int kD, int kWarps, bool BF16>
__device__ __forceinline__ void finish_tail_piece(const FwdArgs& a, const float (&o)[kD / 2],
                                                  const float (&inv)[2], const float (&lse)[2],
                                                  const TailPiece& pc, int cw, int lane, int b,
                                                  int h, int row0) {
  const int slot = 2 * static_cast<int>(blockIdx.x) + (pc.index == 0 ? 1 : 0);
  float* dst = tail_word<kD, kWarps>(a, slot, cw, 0, lane);
#pragma unroll
  for (int v = 0; v < kD / 2; ++v)
    __stcg(dst + 32 * v, o[v] * inv[(v >> 1) & 1]);
  __stcg(dst + 32 * (kD / 2), lse[0]);
  __stcg(dst + 32 * (kD / 2 + 1), lse[1]);
  __syncwarp();
  int* counter = a.tail_counters + pc.j * kWarps + cw;
  int arrived = 0;
  if (lane == 0) {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    arrived = atomicAdd(counter, 1);
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  arrived = __shfl_sync(0xffffffffu, arrived, 0);
  if (arrived != pc.pieces - 1) return;  // not the last piece: the last one merges
  __syncwarp();                          // (lane 0's acquire before every lane's loads)
  if (lane == 0) *counter = 0;           // the next launch starts from 0 (stream order)
  merge_tail_pieces<kD, kWarps, BF16>(a, pc, cw, lane, b, h, row0);
}

}  // namespace attnkit::flash3
