// The two kernels both passes use: score tiles (forward: raw scores; backward: P and dS fused)
// and the row-block product W . X (forward: out = P . V; backward: dq = dS . K).
#pragma once

#include "backends/cuda_math/tiles.cuh"

namespace attnkit::cuda_math {

/// Grid (ceil(Sk / 64), chunk row blocks), kThreads threads. Block (x, y) computes the 64 x 64
/// tile of keys [64x, 64x + 64) for row block t0 + y, writing rows of w1 (and w2), ld = ldw.
///  forward : w1[r][j] = final score (-inf where not visible)
///  backward: w1[r][j] = dropout(P)[i][j] (for dV), w2[r][j] = dS * softcap' * scale (for dQ, dK)
///            with P = exp(s - lse_i), dP = dropout(dO_i . v_j), dS = P (dP - delta_i).
/// Tiles outside sequence b's (sq, sk) are left unwritten (no kernel reads them); tiles the
/// causal/window rules hide entirely are filled (-inf / 0) without the products.
template <typename T, bool kBackward>
__global__ void __launch_bounds__(kThreads)
    scores_kernel(const Params p, int64_t t0, int64_t nrb, float* __restrict__ w1,
                  float* __restrict__ w2, int64_t ldw, const float* __restrict__ delta) {
  const RowBlock rb = row_block(p, t0 + blockIdx.y, nrb);
  const int64_t sq = rb.span.sq, sk = rb.span.sk;
  const int64_t i0 = rb.i0, j0 = static_cast<int64_t>(blockIdx.x) * kCols;
  if (i0 >= sq || j0 >= sk) return;
  const int64_t nrows = min(static_cast<int64_t>(kRows), sq - i0);
  const int64_t nkeys = min(static_cast<int64_t>(kCols), sk - j0);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float* W1 = w1 + static_cast<int64_t>(blockIdx.y) * kRows * ldw;
  float* W2 = kBackward ? w2 + static_cast<int64_t>(blockIdx.y) * kRows * ldw : nullptr;

  if (tile_invisible(p, i0, i0 + nrows - 1, j0, j0 + nkeys - 1, sq, sk)) {
    for (int a = 0; a < 4; ++a)
      for (int c = 0; c < 4; ++c) {
        const int r = ty + 16 * a, cc = tx + 16 * c;
        if (r >= nrows || cc >= nkeys) continue;
        W1[r * ldw + j0 + cc] = kBackward ? 0.f : -INFINITY;
        if (kBackward) W2[r * ldw + j0 + cc] = 0.f;
      }
    return;
  }

  __shared__ SmemTile as, bs;
  float acc[4][4] = {};  // q_i . k_j
  const T* qb = token_ptr<T>(p.q, p.q_st, rb.b, rb.span.q_start + i0, rb.h);
  const T* kb = token_ptr<T>(p.k, p.k_st, rb.b, rb.span.k_start + j0, rb.g);
  for (int64_t d0 = 0; d0 < p.head_dim; d0 += kStep) {
    stage_tokens_by_feature(as, qb, p.q_st.s, p.q_st.d, nrows, d0, p.head_dim);
    stage_tokens_by_feature(bs, kb, p.k_st.s, p.k_st.d, nkeys, d0, p.head_dim);
    __syncthreads();
    tile_fma(as, bs, acc);
    __syncthreads();
  }
  float dp[4][4] = {};  // dO_i . v_j (backward only)
  if constexpr (kBackward) {
    const T* ob = token_ptr<T>(p.dout, p.dout_st, rb.b, rb.span.q_start + i0, rb.h);
    const T* vb = token_ptr<T>(p.v, p.v_st, rb.b, rb.span.k_start + j0, rb.g);
    for (int64_t d0 = 0; d0 < p.head_dim_v; d0 += kStep) {
      stage_tokens_by_feature(as, ob, p.dout_st.s, p.dout_st.d, nrows, d0, p.head_dim_v);
      stage_tokens_by_feature(bs, vb, p.v_st.s, p.v_st.d, nkeys, d0, p.head_dim_v);
      __syncthreads();
      tile_fma(as, bs, dp);
      __syncthreads();
    }
  }

  for (int a = 0; a < 4; ++a) {
    const int r = ty + 16 * a;
    if (r >= nrows) continue;
    const int64_t i = i0 + r;
    float lse = 0.f, dlt = 0.f;
    if constexpr (kBackward) {
      lse = p.lse[rb.b * p.lse_st.b + rb.h * p.lse_st.h + (rb.span.q_start + i) * p.lse_st.s];
      dlt = delta[(rb.b * p.heads_q + rb.h) * p.seqlen_q + i];
    }
    for (int c = 0; c < 4; ++c) {
      const int cc = tx + 16 * c;
      if (cc >= nkeys) continue;
      const int64_t j = j0 + cc;
      float th;
      const float s = final_score(p, rb.b, rb.h, i, j, rb.span, acc[a][c], th);
      if constexpr (!kBackward) {
        W1[r * ldw + j] = s;
      } else {
        // A hidden element, or a row whose lse is -inf (no visible key), has P = 0: never
        // exp(-inf - -inf) = NaN.
        const float prob = (s == -INFINITY || lse == -INFINITY) ? 0.f : expf(s - lse);
        const bool keep = kept(p, rb.b, rb.h, i, j);
        const float pd = keep ? prob * p.dropout_rescale : 0.f;
        const float dpd = keep ? dp[a][c] * p.dropout_rescale : 0.f;
        float ds = prob * (dpd - dlt);
        if (p.softcap > 0.f) ds *= 1.f - th * th;  // d(c tanh(x / c)) / dx
        W1[r * ldw + j] = pd;
        W2[r * ldw + j] = ds * p.scale;
      }
    }
  }
}

/// Grid (ceil(Dx / 64), chunk row blocks), kThreads threads: for row block t0 + y,
/// y_out[i][c] = sum_j W[r][j] X[j][c] over the keys the rules can make visible, where
///  kDq = false: X = v, Dx = Dv, y_out = out;   kDq = true: X = k, Dx = D, y_out = dq.
/// Rows without visible keys get 0 (their W rows are 0).
template <typename T, bool kDq>
__global__ void __launch_bounds__(kThreads)
    wx_kernel(const Params p, int64_t t0, int64_t nrb, const float* __restrict__ w, int64_t ldw) {
  const RowBlock rb = row_block(p, t0 + blockIdx.y, nrb);
  const int64_t sq = rb.span.sq, sk = rb.span.sk;
  const int64_t i0 = rb.i0, c0 = static_cast<int64_t>(blockIdx.x) * kCols;
  const int64_t dx = kDq ? p.head_dim : p.head_dim_v;
  if (i0 >= sq || c0 >= dx) return;
  const int64_t nrows = min(static_cast<int64_t>(kRows), sq - i0);
  const float* W = w + static_cast<int64_t>(blockIdx.y) * kRows * ldw;

  // Keys any row of this block can see: [lo(i0), hi(i_last)] clipped to [0, sk - 1].
  int64_t j_lo = 0, j_hi = sk - 1;
  if (sk > 0) {
    j_lo = max(j_lo, structural_key_range(p, i0, sq, sk).lo);
    j_hi = min(j_hi, structural_key_range(p, i0 + nrows - 1, sq, sk).hi);
  }
  const void* xbase = kDq ? p.k : p.v;
  const Strides4& xst = kDq ? p.k_st : p.v_st;

  __shared__ SmemTile as, bs;
  float acc[4][4] = {};
  for (int64_t j0 = j_lo; j0 <= j_hi; j0 += kStep) {
    const T* xb = token_ptr<T>(xbase, xst, rb.b, rb.span.k_start + j0, rb.g);
    stage_w_by_key(as, W, ldw, nrows, j0, j_hi);
    stage_features_by_token(bs, xb, xst.s, xst.d, j_hi - j0 + 1, c0, dx);
    __syncthreads();
    tile_fma(as, bs, acc);
    __syncthreads();
  }

  void* ybase = kDq ? p.dq : p.out;
  const Strides4& yst = kDq ? p.dq_st : p.out_st;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int a = 0; a < 4; ++a) {
    const int r = ty + 16 * a;
    if (r >= nrows) continue;
    T* y =
        static_cast<T*>(ybase) + rb.b * yst.b + (rb.span.q_start + i0 + r) * yst.s + rb.h * yst.h;
    for (int c = 0; c < 4; ++c) {
      const int64_t col = c0 + tx + 16 * c;
      if (col < dx) y[col * yst.d] = cuda::from_float<T>(acc[a][c]);
    }
  }
}

}  // namespace attnkit::cuda_math
