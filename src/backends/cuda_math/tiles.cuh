// Shared-memory staging and the 64 x 64 fp32 tile product used by every cuda_math kernel.
// A tile product accumulates acc[a][c] += A[kk][ty + 16a] * B[kk][tx + 16c] over kk < kStep,
// where A and B are [kStep][kPad] fp32 shared arrays staged by the helpers below.
#pragma once

#include "backends/cuda_math/common.cuh"

namespace attnkit::cuda_math {

using SmemTile = float[kStep][kPad];

/// dst[kk][r] = x(row0 + r, d0 + kk) for a token-major tensor (rows = tokens, kk = features):
/// element (r, d) at base[r * st_s + d * st_d]. Rows >= nrows or features >= dlim read as 0.
/// Consecutive threads take consecutive features (coalesced when st_d == 1).
template <typename T>
__device__ __forceinline__ void stage_tokens_by_feature(SmemTile& dst, const T* base, int64_t st_s,
                                                        int64_t st_d, int64_t nrows, int64_t d0,
                                                        int64_t dlim) {
  for (int idx = threadIdx.x; idx < kRows * kStep; idx += kThreads) {
    const int r = idx / kStep, kk = idx % kStep;
    float x = 0.f;
    if (r < nrows && d0 + kk < dlim) x = cuda::to_float(base[r * st_s + (d0 + kk) * st_d]);
    dst[kk][r] = x;
  }
}

/// dst[kk][c] = x(kk, c0 + c) for a token-major tensor whose first token is base (kk = tokens,
/// c = features). Tokens >= ntok or features >= dlim read as 0. Coalesced along features.
template <typename T>
__device__ __forceinline__ void stage_features_by_token(SmemTile& dst, const T* base, int64_t st_s,
                                                        int64_t st_d, int64_t ntok, int64_t c0,
                                                        int64_t dlim) {
  for (int idx = threadIdx.x; idx < kStep * kCols; idx += kThreads) {
    const int kk = idx / kCols, c = idx % kCols;
    float x = 0.f;
    if (kk < ntok && c0 + c < dlim) x = cuda::to_float(base[kk * st_s + (c0 + c) * st_d]);
    dst[kk][c] = x;
  }
}

/// dst[kk][r] = W[r][j0 + kk] (workspace rows, ld = ldw); rows >= nrows or keys > j_hi read 0.
__device__ __forceinline__ void stage_w_by_key(SmemTile& dst, const float* w, int64_t ldw,
                                               int64_t nrows, int64_t j0, int64_t j_hi) {
  for (int idx = threadIdx.x; idx < kRows * kStep; idx += kThreads) {
    const int r = idx / kStep, kk = idx % kStep;
    dst[kk][r] = (r < nrows && j0 + kk <= j_hi) ? w[r * ldw + j0 + kk] : 0.f;
  }
}

/// dst[kk][c] = W[r0 + kk][j0 + c]; rows >= nrows or keys > j_hi read 0.
__device__ __forceinline__ void stage_w_by_row(SmemTile& dst, const float* w, int64_t ldw,
                                               int64_t r0, int64_t nrows, int64_t j0,
                                               int64_t j_hi) {
  for (int idx = threadIdx.x; idx < kStep * kCols; idx += kThreads) {
    const int kk = idx / kCols, c = idx % kCols;
    dst[kk][c] = (r0 + kk < nrows && j0 + c <= j_hi) ? w[(r0 + kk) * ldw + j0 + c] : 0.f;
  }
}

__device__ __forceinline__ void tile_fma(const SmemTile& a, const SmemTile& b, float (&acc)[4][4]) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll 8
  for (int kk = 0; kk < kStep; ++kk) {
    float av[4], bv[4];
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      av[x] = a[kk][ty + 16 * x];
      bv[x] = b[kk][tx + 16 * x];
    }
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
  }
}

}  // namespace attnkit::cuda_math
