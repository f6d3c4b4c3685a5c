// The forward's split tail (D = 256 64-row kernel, non-causal; launch.cuh launch_fwd_split_tail).
//
// Why: every BENCHMARKS.md shape at D = 256 has 2048 query tiles of 64 rows, and the 64-row
// kernel runs two CTAs per SM: 264 slots on an H100, 7.76 waves, so the last wave leaves 64
// slots idle for a whole tile time. bench/gpu/flash_wave_probe.py (session 18) measured what that
// costs by timing a nearby shape whose tile count fills every wave: +2.2 % (S 512), +2.4 % (1k),
// +1.4 % (4k) more TFLOP/s for ours and the same for FA-2.
//
// How: the launch runs the whole tiles of every full wave as before (fwd_kernel, which lets the
// next launch start as soon as all its CTAs run: griddepcontrol.launch_dependents), then
// fwd_tail_kernel (programmatic dependent launch: its CTAs take slots as the first kernel's free
// them): first the whole tiles left before the tail, then the last `tiles` tiles' key blocks
// dealt out in contiguous ranges to one CTA per slot (core/tail_ranges.hpp). A tile cut by a
// range boundary is computed in pieces: each piece stores its normalised O and log2-sum-exp
// (fp32) in its workspace slot and counts itself on the tile's counter; the last piece to arrive
// merges every piece of the tile in piece order (so the result does not depend on which one
// arrives last), writes O and lse, and sets the counter back to 0. Nothing waits on another CTA.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backends/flash/score_mod.cuh"
#include "core/params.hpp"
#include "core/score_policy.hpp"
#include "core/tail_ranges.hpp"
#include "cuda/pdl.hpp"
#include "cuda/ptx_sm80.hpp"

namespace attnkit::flash {

/// fwd_tail_kernel's arguments. Tiles are numbered like fwd_tile_of's (m blocks fastest, then
/// heads, then batch); the kernel's CTAs 0 .. whole - 1 take tiles first_tile + c whole, CTAs
/// whole .. whole + ranges.ctas - 1 the block ranges of the `ranges.tiles` tiles after those.
struct FwdTailArgs {
  int64_t first_tile = 0;
  int whole = 0;
  TailRanges ranges;
  float* ws = nullptr;      // [2 * ranges.ctas][warps][FwdPieceWords][32] fp32 (slots)
  int* counters = nullptr;  // [ranges.tiles], 0 between launches (cuda::zeroed_counters)
};

/// One piece of a split tile, as fwd_tile runs it: key blocks [n_lo, n_hi), piece `index` of
/// `pieces` (pieces == 1: the whole tile, the normal epilogue).
struct FwdPiece {
  int n_lo = 0, n_hi = 0;
  int index = 0, pieces = 1;
  int tile = 0;  // tail tile (counters, TailRanges::slot)
};

/// fp32 words per lane of a warp's slot: its (16 * kMT, kD) O fragment (kMT * kDT * 4 values,
/// mma C layout) then one log2-sum-exp per row it holds (2 * kMT).
template <int kMT, int kDT>
inline constexpr int kPieceWords = kMT* kDT * 4 + 2 * kMT;

/// The epilogue of a piece of a split tile (pieces > 1), in place of fwd_tile's: o, m_run (log2
/// units) and l_run (this lane's partial row sums) as its key loop left them.
template <int kMT, int kDT, int kWarps, typename T>
__device__ __forceinline__ void fwd_piece_epilogue(const Params& p, const FwdTailArgs& ta,
                                                   const FwdPiece& pc, float (&o)[kMT][kDT][4],
                                                   const float (&m_run)[kMT][2],
                                                   const float (&l_run)[kMT][2], int64_t b,
                                                   int64_t h, const SeqSpan& sp, int64_t m0,
                                                   int dv_valid) {
  constexpr int kVals = kMT * kDT * 4, kWords = kPieceWords<kMT, kDT>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int qr = lane / 4, qc = (lane % 4) * 2;
  // Word w of this lane in slot s: lanes of a warp store 32 consecutive floats (coalesced).
  auto word = [&](int64_t s, int w) {
    return ta.ws + ((s * kWarps + warp) * kWords + w) * 32 + lane;
  };
  // 1. This piece's normalised O and log2-sum-exp into its slot, then count it.
  {
    float* const dst = word(ta.ranges.slot(pc.tile, pc.index), 0);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float l = l_run[mt][r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
          for (int e = r * 2; e < r * 2 + 2; ++e)
            __stcg(dst + 32 * ((mt * kDT + dt) * 4 + e), o[mt][dt][e] * inv);
        __stcg(dst + 32 * (kVals + mt * 2 + r), l > 0.f ? m_run[mt][r] + log2f(l) : -INFINITY);
      }
  }
  __shared__ int arrived;
  __threadfence();  // this thread's slot stores before the count (threadFenceReduction's order)
  __syncthreads();
  if (threadIdx.x == 0) arrived = atomicAdd(ta.counters + pc.tile, 1);
  __syncthreads();
  if (arrived != pc.pieces - 1) return;  // not the last piece: the last one merges
  __threadfence();                       // the other pieces' slots, as their counts ordered them
  if (threadIdx.x == 0) ta.counters[pc.tile] = 0;  // the next launch starts from 0 (stream order)

  // 2. Merge every piece in piece order (own one read back too: the sum's order is fixed).
  float lse_max[kMT][2], den[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      lse_max[mt][r] = -INFINITY;
      den[mt][r] = 0.f;
    }
  for (int i = 0; i < pc.pieces; ++i) {
    const float* src = word(ta.ranges.slot(pc.tile, i), kVals);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        lse_max[mt][r] = fmaxf(lse_max[mt][r], __ldcg(src + 32 * (mt * 2 + r)));
  }
  // (A row without any key in every piece has lse_max = -inf: weight 0, O 0, lse -inf.)
  auto weight = [&](float lse, int mt, int r) {
    return lse_max[mt][r] == -INFINITY ? 0.f : exp2f(lse - lse_max[mt][r]);
  };
  for (int i = 0; i < pc.pieces; ++i) {
    const float* src = word(ta.ranges.slot(pc.tile, i), kVals);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        den[mt][r] += weight(__ldcg(src + 32 * (mt * 2 + r)), mt, r);
  }
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o[mt][dt][e] = 0.f;
  for (int i = 0; i < pc.pieces; ++i) {
    const float* src = word(ta.ranges.slot(pc.tile, i), 0);
    float c[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        c[mt][r] = den[mt][r] > 0.f
                       ? weight(__ldcg(src + 32 * (kVals + mt * 2 + r)), mt, r) / den[mt][r]
                       : 0.f;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          o[mt][dt][e] =
              fmaf(c[mt][e / 2], __ldcg(src + 32 * ((mt * kDT + dt) * 4 + e)), o[mt][dt][e]);
  }

  // 3. O (4-byte stores of element pairs: the tail is a few tiles) and lse.
  T* o_ptr = static_cast<T*>(p.out) + b * p.out_st.b + sp.q_start * p.out_st.s + h * p.out_st.h;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t i = m0 + warp * 16 * kMT + mt * 16 + qr + r * 8;
      if (i >= sp.sq) continue;
      T* orow = o_ptr + i * p.out_st.s;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int c = dt * 8 + qc;
        if (c < dv_valid)
          *reinterpret_cast<uint32_t*>(orow + c) =
              ptx::pack2<T>(o[mt][dt][r * 2], o[mt][dt][r * 2 + 1]);
      }
      if (p.lse != nullptr && (lane % 4) == 0)
        p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i) * p.lse_st.s] =
            den[mt][r] > 0.f ? (lse_max[mt][r] + log2f(den[mt][r])) * kLn2 : -INFINITY;
    }
}

}  // namespace attnkit::flash
