// Geometry, element addressing and the score transform shared by cuda_math's kernels.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/params.hpp"
#include "core/philox.hpp"
#include "core/score_policy.hpp"
#include "cuda/dtype_cuda.hpp"

namespace attnkit::cuda_math {

constexpr int kRows = 64;      // query rows per row block (and per score / output tile)
constexpr int kCols = 64;      // keys per score tile, or feature columns per output tile
constexpr int kStep = 32;      // reduction slice staged in shared memory per iteration
constexpr int kThreads = 256;  // 16 x 16 threads; thread (ty, tx) owns rows ty + 16a and
                               // columns tx + 16c, a, c in [0, 4): strided, so shared-memory
                               // reads are broadcasts (rows) and consecutive words (columns)
constexpr int kPad = 65;       // shared tile row length (64 + 1: conflict-free transposed stores)

inline constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Flat row block t -> (b, h, g, first row i0) and sequence b's span.
struct RowBlock {
  int64_t b, h, g, i0;
  SeqSpan span;
};
__device__ __forceinline__ RowBlock row_block(const Params& p, int64_t t, int64_t nrb) {
  RowBlock r;
  const int64_t bh = t / nrb;
  r.b = bh / p.heads_q;
  r.h = bh % p.heads_q;
  r.g = r.h / p.group;
  r.i0 = (t % nrb) * kRows;
  r.span = seq_span(p, r.b);
  return r;
}

/// True when no (i, j) with i in [i0, i_last], j in [j0, j_last] passes the causal/window rules
/// (both ends of structural_key_range are non-decreasing in i, so the union of the rows' ranges
/// is [lo(i0), hi(i_last)]).
__device__ __forceinline__ bool tile_invisible(const Params& p, int64_t i0, int64_t i_last,
                                               int64_t j0, int64_t j_last, int64_t sq, int64_t sk) {
  if (p.causal == Causal::none && p.window_left < 0 && p.window_right < 0) return false;
  const int64_t lo = structural_key_range(p, i0, sq, sk).lo;
  const int64_t hi = structural_key_range(p, i_last, sq, sk).hi;
  return j_last < lo || j0 > hi;
}

/// Final score of (b, h, i, j) from the raw dot product q_i . k_j (DESIGN.md §2 order: scale,
/// softcap, ALiBi, additive mask; -inf when not visible). tanh_out receives tanh(x / c) for the
/// softcap derivative (0 without softcap).
__device__ __forceinline__ float final_score(const Params& p, int64_t b, int64_t h, int64_t i,
                                             int64_t j, const SeqSpan& sp, float dot,
                                             float& tanh_out) {
  tanh_out = 0.f;
  if (!structurally_visible(p, i, j, sp.sq, sp.sk)) return -INFINITY;
  float s = p.scale * dot;
  if (p.softcap > 0.f) {
    tanh_out = tanhf(s / p.softcap);
    s = p.softcap * tanh_out;
  }
  if (p.alibi != nullptr) s += alibi_bias<float>(p, b, h, i, j, sp.sq, sp.sk);
  if (p.mask_kind != MaskKind::none) {
    const int64_t off = b * p.mask_st.b + h * p.mask_st.h + i * p.mask_st.s + j * p.mask_st.d;
    if (p.mask_kind == MaskKind::keep_bool) {
      if (static_cast<const uint8_t*>(p.mask)[off] == 0) return -INFINITY;
    } else {
      s += cuda::load_float_dyn(p.mask, off, p.mask_dtype);
    }
  }
  return s;
}

/// Whether dropout keeps (b, h, i, j) (philox.hpp's rule; always true without dropout).
__device__ __forceinline__ bool kept(const Params& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (p.dropout_threshold == 0) return true;  // (Params::has_dropout is host-only)
  return dropout_keep(p.seed, p.offset, b, h, p.heads_q, i, j, p.dropout_threshold);
}

/// Pointer to element (b, token row, head, 0) of a [B, S, H, D] view with strides st.
template <typename T>
__device__ __forceinline__ const T* token_ptr(const void* base, const Strides4& st, int64_t b,
                                              int64_t row, int64_t head) {
  return static_cast<const T*>(base) + b * st.b + row * st.s + head * st.h;
}

// ---- block reductions (kThreads threads) -------------------------------------------------------
__device__ __forceinline__ float block_max(float x, float* scratch) {
  for (int o = 16; o > 0; o >>= 1)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w)
    x = fmaxf(x, scratch[w]);
  return x;
}
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  for (int o = 16; o > 0; o >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = 0.f;
  for (int w = 0; w < kThreads / 32; ++w)
    x += scratch[w];  // fixed order: deterministic
  return x;
}

}  // namespace attnkit::cuda_math
