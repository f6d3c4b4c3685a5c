// kVarScoreMod (session 23): softcap, ALiBi and the sliding window on one 64 x kBlockN score tile
// in the wgmma accumulator layout (softmax.cuh: s[4*j + 2*r + e] is row row0 + 8*r, column
// n0 + 8*j + 2*(lane%4) + e), applied between the Q K^T wait and the online softmax, in the
// order of core/score_policy.hpp: softcap, then ALiBi, then the mask (session 24: bool -> -inf,
// additive added), then visibility (-inf).
//
// Units: s is the raw dot product q.k; the softmax multiplies by FwdArgs::scale_log2. With a
// softcap the tile becomes t = tanh(scale * s / c) and the launch sets scale = c, scale_log2 =
// c * log2(e) (fwd_args.hpp), so softmax and lse see c * t; ALiBi's bias is added in the same
// units (FwdArgs::alibi_mul = -1 / scale').
//
// tanh(x) = 1 - 2 / (1 + e^(2x)) (cuda/sfu_math.cuh tanh_exp2: ~2e-7, 2 MUFU per element on top
// of the softmax's exp2): the softmax of a softcapped tile costs ~3x the MUFU time of a plain one
// (D = 128: 1.5x the tile's tensor time instead of 0.5x; D = 256: 0.75x instead of 0.25x).
// Measured (session 23, H200): D 128 ~390 TFLOP/s softcapped vs ~600 plain, at that MUFU floor.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/flash3/fwd_args.hpp"
#include "backends/flash3/mask_elem.cuh"
#include "backends/flash3/softmax.cuh"
#include "cuda/sfu_math.cuh"

namespace attnkit::flash3 {

// Where softcap's reciprocal runs (session 23 A/B, bench/gpu/flash3_softcap_ab.sh): 0 = SFU for
// every score (3 MUFU per score with the softmax's exp2), 1 = FMA pipe for every score
// (cuda/sfu_math.cuh tanh_exp2_fma_rcp: 2 MUFU + 8 more FMA-pipe instructions), 2 = FMA pipe for
// the odd registers (2.5 MUFU per score).
#ifndef ATTNKIT_FLASH3_SOFTCAP_RCP
#define ATTNKIT_FLASH3_SOFTCAP_RCP 0
#endif

/// tanh(x) for x = s * k / (2 log2 e), i.e. k = 2 log2(e) * (the scale of s) / softcap
/// (FwdArgs::softcap_k; cuda/sfu_math.cuh has the error bounds). kFmaRcp: the reciprocal on the
/// FMA pipe.
template <bool kFmaRcp = false>
__device__ __forceinline__ float softcap_tanh(float s, float k) {
  return kFmaRcp ? attnkit::cuda::tanh_exp2_fma_rcp(s * k) : attnkit::cuda::tanh_exp2(s * k);
}

/// Softcap and ALiBi on the raw scores of key block n0 .. n0 + kBlockN - 1 (alibi_k = slope of
/// this (b, h) * FwdArgs::alibi_mul, 0 = none). Both branches are uniform (launch constants).
template <int kBlockN>
__device__ __forceinline__ void transform_tile(float (&s)[kBlockN / 2], const FwdArgs& a, int n0,
                                               int row0, int lane, float alibi_k) {
  if (a.softcap_k != 0.f) {
    constexpr int kRcp = ATTNKIT_FLASH3_SOFTCAP_RCP;
#pragma unroll
    for (int i = 0; i < kBlockN / 2; ++i) {
      if (kRcp == 1 || (kRcp == 2 && (i & 1) != 0))
        s[i] = softcap_tanh<true>(s[i], a.softcap_k);
      else
        s[i] = softcap_tanh<false>(s[i], a.softcap_k);
    }
  }
  if (alibi_k != 0.f) {
    const int col0 = n0 + 2 * (lane & 3);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int d0 = row0 + 8 * r + a.diag_offset - col0;  // |d0 - 8 j - e| = |i + Sk - Sq - col|
#pragma unroll
      for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int dist = abs(d0 - 8 * j - e);
          s[4 * j + 2 * r + e] = fmaf(alibi_k, static_cast<float>(dist), s[4 * j + 2 * r + e]);
        }
      }
    }
  }
}

/// Visibility with the window's left edge: key j of row i is kept iff j < seqlen_k,
/// (!causal or j <= i + offset) and (!lo_on or j >= i + lo_offset). mask_tile plus the left edge.
template <int kBlockN>
__device__ __forceinline__ void mask_tile_window(float (&s)[kBlockN / 2], int n0, int row0,
                                                 int lane, int seqlen_k, bool causal, int offset,
                                                 bool lo_on, int lo_offset) {
  const int col0 = n0 + 2 * (lane & 3);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + 8 * r;
    int limit = seqlen_k;  // first invisible key on the right
    if (causal && i + offset + 1 < limit) limit = i + offset + 1;
    const int first = lo_on ? i + lo_offset : INT32_MIN;  // first visible key on the left
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = col0 + 8 * j + e;
        if (col >= limit || col < first) s[4 * j + 2 * r + e] = -INFINITY;
      }
    }
  }
}

/// The mask of tile (b, h) (FwdArgs::mask at its (b, h) offset), null without a mask.
__device__ __forceinline__ const uint8_t* mask_base(const FwdArgs& a, int b, int h) {
  if (a.mask_kind == 0) return nullptr;
  const int64_t bytes = a.mask_kind == 1 ? 1 : a.mask_kind == 2 ? 4 : 2;
  return a.mask + (b * a.mask_sb + h * a.mask_sh) * bytes;
}

/// apply_mask_tile for one mask kind. Session 25 (call 6 measured the per-element version at
/// 0.19-0.60x cuDNN's masked forward: its loads sat in per-element branches, one in flight at a
/// time): the elements of 4 key groups (2 rows x 4 x 2 keys) are loaded first, from indices
/// clamped into the mask (rows >= Sq read row Sq - 1, keys >= Sk key Sk - 1: those scores are
/// hidden by mask_tile_window or never stored), so the loads are branch-free and 16 in flight;
/// then applied (all kBlockN / 2 at once spilled: 120 bytes at D 128).
template <int kBlockN, int kKind>
__device__ __forceinline__ void apply_mask_kind(float (&s)[kBlockN / 2], const FwdArgs& a,
                                                const uint8_t* m, int n0, int row0, int lane) {
  using E = MaskElem<kKind>;
  constexpr int kGroups = 4;  // key groups of 8 per chunk
  static_assert((kBlockN / 8) % kGroups == 0, "whole chunks");
  const int col0 = n0 + 2 * (lane & 3);
  const E* mrow[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    mrow[r] = reinterpret_cast<const E*>(m) +
              static_cast<int64_t>(min(row0 + 8 * r, a.seqlen_q - 1)) * a.mask_si;
#pragma unroll
  for (int j0 = 0; j0 < kBlockN / 8; j0 += kGroups) {
    E v[2][kGroups][2];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        const int col = col0 + 8 * (j0 + g);
#pragma unroll
        for (int e = 0; e < 2; ++e)
          v[r][g][e] = mrow[r][static_cast<int64_t>(min(col + e, a.seqlen_k - 1)) * a.mask_sj];
      }
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int g = 0; g < kGroups; ++g)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[4 * (j0 + g) + 2 * r + e];
          x = masked_score<kKind>(x, v[r][g][e], a.mask_mul);
        }
  }
}

/// The mask on the transformed scores of key block n0 .. n0 + kBlockN - 1 (m = mask_base): a
/// bool mask's false -> -inf, an additive mask's value (natural units) added times mask_mul.
/// Read tile by tile from global memory (L1 / L2), never materialised; one branch per tile on
/// the kind (apply_mask_kind).
template <int kBlockN>
__device__ __forceinline__ void apply_mask_tile(float (&s)[kBlockN / 2], const FwdArgs& a,
                                                const uint8_t* m, int n0, int row0, int lane) {
  switch (a.mask_kind) {
    case 1:
      return apply_mask_kind<kBlockN, 1>(s, a, m, n0, row0, lane);
    case 2:
      return apply_mask_kind<kBlockN, 2>(s, a, m, n0, row0, lane);
    case 3:
      return apply_mask_kind<kBlockN, 3>(s, a, m, n0, row0, lane);
    case 4:
      return apply_mask_kind<kBlockN, 4>(s, a, m, n0, row0, lane);
    default:
      return;
  }
}

/// The slope term of transform_tile for tile (b, h): slope * alibi_mul, 0 without ALiBi.
__device__ __forceinline__ float alibi_factor(const FwdArgs& a, int b, int h) {
  return a.alibi == nullptr ? 0.f : a.alibi[b * a.alibi_sb + h * a.alibi_sh] * a.alibi_mul;
}

/// kVarScoreMod's step between the S wait and the online softmax: softcap and ALiBi, then the
/// mask where key block nb of this warpgroup's 64 rows (first_row .. first_row + 63) needs one:
/// keys >= Sk, keys right of the first row's bound, or keys left of the last row's left edge.
/// (The other kernels keep their own test and mask_tile, unchanged: session 23 compared their
/// SASS before and after.)
template <int kBlockN>
__device__ __forceinline__ void score_mod_tile(float (&s)[kBlockN / 2], const FwdArgs& a, int nb,
                                               int first_row, int row0, int lane, float alibi_k,
                                               const uint8_t* mask_bh = nullptr) {
  transform_tile<kBlockN>(s, a, nb * kBlockN, row0, lane, alibi_k);
  if (mask_bh != nullptr) apply_mask_tile<kBlockN>(s, a, mask_bh, nb * kBlockN, row0, lane);
  // (mask_blocks.hpp block_needs_mask's rule plus the window's left edge, written out: calling
  // the helper here changed the SASS of the score-mod kernels, which was not re-measured.)
  const bool needs_mask = (nb + 1) * kBlockN > a.seqlen_k ||
                          (a.causal && (nb + 1) * kBlockN - 1 > first_row + a.causal_offset) ||
                          (a.window_lo && nb * kBlockN < first_row + 63 + a.lo_offset);
  if (needs_mask)
    mask_tile_window<kBlockN>(s, nb * kBlockN, row0, lane, a.seqlen_k, a.causal, a.causal_offset,
                              a.window_lo != 0, a.lo_offset);
}

}  // namespace attnkit::flash3
