// Online softmax over one 64 x kBlockN score tile held in the wgmma accumulator layout.
//
// Each thread owns 2 rows (r = 0: row 16*warp + lane/4, r = 1: that + 8) and, per row,
// kBlockN/4 columns: s[4*j + 2*r + e] is column 8*j + 2*(lane%4) + e. A row's 4 owners are the 4
// consecutive lanes of a quad, so row reductions are two xor-shuffles.
//
// Scale folded into exp2 (one FFMA per element): p = 2^(s*scale_log2 - m*scale_log2) where m is
// the running max of the RAW scores. Row sums stay per-thread partial (the quad reduction is
// done once, in finalize) because the rescale factor is identical across the quad.
// Fully masked rows: m stays -inf, the reference becomes 0, every p = 2^-inf = 0, l = 0; the
// epilogue turns l = 0 into out = 0, lse = -inf (never NaN).
#pragma once

#include <cstdint>

#include "cuda/sfu_math.cuh"

namespace attnkit::flash3 {

__device__ __forceinline__ float fast_exp2(float x) {
  return attnkit::cuda::ex2_approx(x);
}

template <int kBlockN>
struct OnlineSoftmax {
  static constexpr int kRegs = kBlockN / 2;  // accumulator registers per thread
  static constexpr float kLazyLog2 = 8.f;    // kLazy: the reference moves past 2^8 growth
  float row_max[2];
  float row_sum[2];  // per-thread partial sums (quad-reduced in finalize)
  // kTcSum (mainloop.cuh kVarTcSum): the row sums as wgmma accumulator columns (P x ones),
  // complete per row: lacc[0], lacc[1] = row r = 0, lacc[2], lacc[3] = row r = 1 (equal
  // columns); rescaled with O, written by the first P V of a tile. Unused (and dead) otherwise.
  float lacc[4];

  __device__ __forceinline__ void init() {
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.f;
  }

  /// Replaces s by the unnormalised probabilities and returns, per row, the factor by which the
  /// output accumulated so far must be multiplied (0 before the first visible key).
  /// kTree: the row max as a pairwise tree (depth log2(kBlockN/4) instead of a kBlockN/4-long
  /// chain of dependent FMNMX: 61 back-to-back FMNMX in the v5 SASS at D = 128 between the S
  /// wait and the first exp2, on every warpgroup's critical path). max is exact in any order
  /// (fmaxf drops NaN operands either way), so results are bit-identical. false = v5 (A/B).
  ///
  /// kLazy (kVarLazyRescale, mainloop.cuh): the reference max of a row moves only when some row
  /// of the warp would see its max grow by more than kLazyLog2 (in log2 units, i.e. p up to
  /// 2^kLazyLog2 = 256 against the stale reference); otherwise every row of the warp keeps its
  /// reference, factor = 1 and the return value false tells the caller to skip O *= factor
  /// (kD/2 FMULs per thread and K/V block: 128 at D = 256, where a block has only 32 scores per
  /// thread). Exact, not an approximation: O, the row sums and lse all use the same reference
  /// (lse = ref * scale + log l). P <= 256 is representable in bf16 and f16 (same relative
  /// rounding), l <= 256 * Sk in fp32. The decision is warp-uniform (vote), so the skipped
  /// rescale is a uniform branch with no wgmma inside. Without kLazy it always returns true.
  /// kNoSum (kTcSum): the row sums are not accumulated here (the tensor core sums P);
  /// row_sum then holds each row's last p (mainloop.cuh softmax_before_wait orders on it; session
  /// 55: anchoring on every p instead, so that every exp2 runs before the P V wait, lost 2-6 % at
  /// D 128 / 256: bench/notes/session55.md).
  /// kLean (mainloop.cuh ATTNKIT_FLASH3_FWD_D64_TURN, D 64 only): exp_row's bit-identical form
  /// with 2 instructions fewer per row (its comment says why the values are the same).
  template <bool kTree = true, bool kLazy = false, bool kNoSum = false, bool kLean = false>
  __device__ __forceinline__ bool step(float (&s)[kRegs], float scale_log2, float (&factor)[2]) {
    if constexpr (!kLazy) {  // row by row, as before kLazy existed (same PTX order)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        exp_row<kNoSum, kLean>(s, r, block_max<kTree>(s, r), scale_log2, factor);
      return true;
    } else {
      float mx[2];
#pragma unroll
      for (int r = 0; r < 2; ++r)
        mx[r] = block_max<kTree>(s, r);
      // (-inf -> finite: +inf > threshold, moves; -inf -> -inf: NaN, compares false.)
      const bool grow = (mx[0] - row_max[0]) * scale_log2 > kLazyLog2 ||
                        (mx[1] - row_max[1]) * scale_log2 > kLazyLog2;
      const bool moved = __any_sync(0xffffffffu, grow);
      if (!moved) mx[0] = row_max[0], mx[1] = row_max[1];
#pragma unroll
      for (int r = 0; r < 2; ++r)
        exp_row<kNoSum, kLean>(s, r, mx[r], scale_log2, factor);
      return moved;
    }
  }

  /// max(row_max[r], the block's scores of row r), quad-reduced.
  template <bool kTree>
  __device__ __forceinline__ float block_max(const float (&s)[kRegs], int r) const {
    float mx = row_max[r];
    if constexpr (kTree) {
      constexpr int n = kBlockN / 8;
      float m[n];
#pragma unroll
      for (int j = 0; j < n; ++j)
        m[j] = fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]);
#pragma unroll
      for (int w = 1; w < n; w *= 2) {
#pragma unroll
        for (int j = 0; j + w < n; j += 2 * w)
          m[j] = fmaxf(m[j], m[j + w]);
      }
      mx = fmaxf(mx, m[0]);
    } else {
#pragma unroll
      for (int j = 0; j < kBlockN / 8; ++j)
        mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    return mx;
  }

  /// Row r against the new reference max mx: factor[r], p = 2^(s * scale_log2 - ref) in place,
  /// row_max / row_sum updated.
  /// kLean: the same bits from 2 instructions fewer per row (FSETP + FSEL -> FMNMX; no FADD):
  ///  - ref = max(mx * scale_log2, -FLT_MAX) instead of (mx == -inf ? 0 : mx * scale_log2).
  ///    A finite mx (scale_log2 > 0, no overflow) gives the same ref; mx = -inf (every score of
  ///    the row -inf so far) gives -FLT_MAX instead of 0, and every value ref reaches is the
  ///    same: fma(-inf, scale_log2, FLT_MAX) = -inf -> p = +0 and factor = 2^-inf = +0 as with
  ///    ref = 0, and no finite score exists in such a row. (mx = NaN, a row of NaN scores only:
  ///    NaN output either way.)
  ///  - sum starts from the row's first p instead of 0 + p: ex2.approx.ftz never returns -0 or a
  ///    subnormal, so 0 + p = p bitwise (a NaN stays NaN).
  template <bool kNoSum = false, bool kLean = false>
  __device__ __forceinline__ void exp_row(float (&s)[kRegs], int r, float mx, float scale_log2,
                                          float (&factor)[2]) {
    const float ref = kLean             ? fmaxf(mx * scale_log2, -3.402823466e38f)
                      : mx == -INFINITY ? 0.f
                                        : mx * scale_log2;
    factor[r] = fast_exp2(row_max[r] * scale_log2 - ref);
    row_max[r] = mx;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = fast_exp2(fmaf(s[4 * j + 2 * r + e], scale_log2, -ref));
        s[4 * j + 2 * r + e] = p;
        if constexpr (!kNoSum) sum = kLean && j == 0 && e == 0 ? p : sum + p;
      }
    }
    if constexpr (!kNoSum)
      row_sum[r] = row_sum[r] * factor[r] + sum;
    else  // (no sum: the row's last p, for softmax_before_wait's anchor in the PV wait's place)
      row_sum[r] = s[4 * (kBlockN / 8 - 1) + 2 * r + 1];
  }

  /// 1/l (0 for an empty row) and the natural-log lse of a row from its complete sum l and
  /// reference max m (finalize's quad-reduced sums, or the Consumer's kTcSum sums from the
  /// accumulator, read after the wgmma that last added to them completed).
  /// 1 / l by rcp.approx and the log by lg2.approx: a non-empty row's l is >= 1 (the reference
  /// max's own p is 2^0; the lazy reference only lags the true max), so ftz and range never
  /// apply, and 1 / l moves by at most 1 ulp before the bf16 rounding. The IEEE reciprocal cost
  /// a slow-path CALL and four BSSY / BSYNC per tile at the tile boundary; the approx forms
  /// measured +1.3..+2.0 % at D 64 S 1k, +0.5..+1.0 % at 4k, +0.3..+2.0 % at D 128 S 1k
  /// (session 34 call 1: against the IEEE build in one process, cuDNN timed in the same loop;
  /// bench/notes/session34.md).
  __device__ __forceinline__ static void finalize_row(float l, float m, float scale, float& inv,
                                                      float& lse) {
    constexpr float kLn2 = 0.693147180559945f;
    const bool empty = !(l > 0.f);
    inv = empty ? 0.f : attnkit::cuda::rcp_approx(l);
    lse = empty ? -INFINITY : fmaf(attnkit::cuda::lg2_approx(l), kLn2, m * scale);
  }

  /// finalize_row per row from the kTcSum sums (lacc: row r's complete sum in lacc[2 r], read
  /// after the wgmma that last added to them completed) and reference maxima m.
  __device__ __forceinline__ static void finalize_acc(const float (&lacc)[4], const float (&m)[2],
                                                      float scale, float (&inv)[2],
                                                      float (&lse)[2]) {
    const float l[2] = {lacc[0], lacc[2]};
#pragma unroll
    for (int r = 0; r < 2; ++r)
      finalize_row(l[r], m[r], scale, inv[r], lse[r]);
  }

  /// Quad-reduces the per-thread sums; finalize_row per row.
  __device__ __forceinline__ void finalize(float scale, float (&inv)[2], float (&lse)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = row_sum[r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      finalize_row(l, row_max[r], scale, inv[r], lse[r]);
    }
  }
};

/// Masks (to -inf) the columns of a score tile that are beyond the key length or, when causal,
/// right of the diagonal: key j is visible from row i iff j < seqlen_k and (!causal or
/// j <= i + offset). n0 = first key of the tile, row0 = global query row of r = 0.
template <int kBlockN>
__device__ __forceinline__ void mask_tile(float (&s)[kBlockN / 2], int n0, int row0, int lane,
                                          int seqlen_k, bool causal, int offset) {
  const int col0 = n0 + 2 * (lane & 3);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + 8 * r;
    int limit = seqlen_k;  // first invisible key
    if (causal && i + offset + 1 < limit) limit = i + offset + 1;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (col0 + 8 * j + e >= limit) s[4 * j + 2 * r + e] = -INFINITY;
    }
  }
}

}  // namespace attnkit::flash3
