// Score variants as one small policy: the logit of element (i, j) of one (batch, head), in log2
// units (so softmax uses exp2), following core/score_policy.hpp exactly:
//   x = scale * q.k ; softcap: x = c * tanh(x / c) ; ALiBi: x -= slope * |i + sk - sq - j| ;
//   additive mask: x += m ; invisible (causal / window / bool mask false / j >= sk) -> -inf.
// kGeneral = false compiles only the structural rules (the fast path: no softcap, ALiBi, mask or
// dropout); the host picks kGeneral = true whenever any of those is set.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "core/params.hpp"
#include "core/philox.hpp"
#include "core/score_policy.hpp"
#include "cuda/sfu_math.cuh"

namespace attnkit::flash {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

/// Per-(batch, head) constants of the score transform.
struct ScoreCtx {
  int b, h, sq, sk;  // 32-bit: lengths < 2^31 (extra_reasons), fewer live registers
  float scale, scale_log2, softcap, tanh_mul, slope;  // tanh_mul = 2 log2(e) / softcap
  const uint8_t* mask;  // element (i, j) at mask + (i * mask_si + j * mask_sj) * mask_bytes
  int64_t mask_si, mask_sj;

  __device__ __forceinline__ void init(const Params& p, int64_t b_, int64_t h_, int64_t sq_,
                                       int64_t sk_) {
    b = static_cast<int>(b_);
    h = static_cast<int>(h_);
    sq = static_cast<int>(sq_);
    sk = static_cast<int>(sk_);
    scale = p.scale;
    scale_log2 = p.scale * kLog2e;
    softcap = p.softcap;
    tanh_mul = p.softcap > 0.f ? cuda::kTwoLog2e / p.softcap : 0.f;
    slope = p.alibi ? p.alibi[b * p.alibi_st_b + h * p.alibi_st_h] : 0.f;
    mask = nullptr;
    mask_si = p.mask_st.s;
    mask_sj = p.mask_st.d;
    if (p.mask_kind != MaskKind::none) {
      const int bytes =
          p.mask_kind == MaskKind::keep_bool ? 1 : (p.mask_dtype == DType::f32 ? 4 : 2);
      mask = static_cast<const uint8_t*>(p.mask) + (b * p.mask_st.b + h * p.mask_st.h) * bytes;
    }
  }
};

/// Inclusive key range [lo, hi] in 32 bits (empty when lo > hi).
struct Range32 {
  int lo, hi;
};

/// Structural key range of row i (core/score_policy.hpp), clipped to [0, sk - 1].
__device__ __forceinline__ Range32 row_range(const Params& p, int64_t i, int64_t sq, int64_t sk) {
  const KeyRange r = structural_key_range(p, i, sq, sk);
  // Clipping first keeps both ends inside [-1, sk] whatever the window arithmetic gave.
  const int64_t lo = r.lo < 0 ? 0 : (r.lo > sk ? sk : r.lo);
  const int64_t hi = r.hi > sk - 1 ? sk - 1 : (r.hi < -1 ? -1 : r.hi);
  return Range32{static_cast<int>(lo), static_cast<int>(hi)};
}

/// 2^x on the SFU (ex2.approx.ftz: 2 ulp; 2^-inf = 0), without exp2f's denormal fix-up.
__device__ __forceinline__ float fast_exp2(float x) {
  return cuda::ex2_approx(x);
}

/// Logit of (i, j) from the raw dot product, as a multiple of `logit_mul<kGeneral>(c)` log2
/// units: the fast path returns the raw dot product (or -inf) and leaves the scale to the
/// exponent's FFMA; the general path returns log2-unit logits. dcap receives
/// d(capped)/d(uncapped) (1 - tanh^2, or 1) for the backward pass. `r` is row i's structural
/// range.
template <bool kGeneral>
__device__ __forceinline__ float score_log2(const Params& p, const ScoreCtx& c, float acc, int i,
                                            int j, const Range32& r, bool check, float& dcap) {
  dcap = 1.f;
  if constexpr (!kGeneral) {
    if (check && (j < r.lo || j > r.hi)) return -INFINITY;
    return acc;
  } else {
    // Rows past the sequence (tile padding) are invisible: the mask must not be read there.
    if (i >= c.sq || j < r.lo || j > r.hi) return -INFINITY;
    float x = acc * c.scale;
    if (c.softcap > 0.f) {
      // tanh on the SFU (cuda/sfu_math.cuh: ~2e-7) since session 23; the build switch
      // ATTNKIT_FLASH_LIBM_TANH=1 restores libm's tanhf for A/B measurements
      // (bench/gpu/flash_tanh_ab.sh).
#if defined(ATTNKIT_FLASH_LIBM_TANH) && ATTNKIT_FLASH_LIBM_TANH
      const float t = tanhf(x * c.tanh_mul * (1.f / cuda::kTwoLog2e));
#else
      const float t = cuda::tanh_exp2(x * c.tanh_mul);
#endif
      x = c.softcap * t;
      dcap = 1.f - t * t;
    }
    if (p.alibi) {
      int dist = i + c.sk - c.sq - j;
      if (dist < 0) dist = -dist;
      x -= c.slope * static_cast<float>(dist);
    }
    if (c.mask) {
      const int64_t e = static_cast<int64_t>(i) * c.mask_si + static_cast<int64_t>(j) * c.mask_sj;
      if (p.mask_kind == MaskKind::keep_bool) {
        if (c.mask[e] == 0) return -INFINITY;
      } else if (p.mask_dtype == DType::f32) {
        x += reinterpret_cast<const float*>(c.mask)[e];
      } else if (p.mask_dtype == DType::f16) {
        x += __half2float(reinterpret_cast<const __half*>(c.mask)[e]);
      } else {
        x += __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(c.mask)[e]);
      }
    }
    return x * kLog2e;
  }
}

/// What score_log2's result must be multiplied by to be in log2 units.
template <bool kGeneral>
__device__ __forceinline__ float logit_mul(const ScoreCtx& c) {
  return kGeneral ? 1.f : c.scale_log2;
}

/// Dropout keep bits of columns (j, j + 1) of row i, j even: bit 0 -> j, bit 1 -> j + 1.
__device__ __forceinline__ uint32_t keep_pair(const Params& p, const ScoreCtx& c, int i, int j) {
  const uint32_t bits4 =
      dropout_keep_bits4(p.seed, p.offset, c.b, c.h, p.heads_q, i, j, p.dropout_threshold);
  return (bits4 >> (j & 3)) & 3u;
}

}  // namespace attnkit::flash
