// cuda_math backward (see cuda_math.hpp for the algorithm). Deterministic: no atomics; every
// output element is summed by one thread in a fixed order, chunks run in stream order.
#include "backends/cuda_math/cuda_math.hpp"
#include "backends/cuda_math/kernels.cuh"
#include "backends/cuda_math/launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::cuda_math {
namespace {

/// delta[(b * Hq + h) * Sq + i] = sum_c dO[b, i, h, c] * O[b, i, h, c] (0 for rows past sq).
/// One warp per row; 8 rows per block.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    delta_kernel(const Params p, float* __restrict__ delta) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int64_t rows = p.batch * p.heads_q * p.seqlen_q;
  if (row >= rows) return;  // whole warp returns together
  const int64_t i = row % p.seqlen_q, bh = row / p.seqlen_q;
  const int64_t b = bh / p.heads_q, h = bh % p.heads_q;
  const SeqSpan sp = seq_span(p, b);
  float acc = 0.f;
  if (i < sp.sq) {
    const T* o = token_ptr<T>(p.out, p.out_st, b, sp.q_start + i, h);
    const T* d = token_ptr<T>(p.dout, p.dout_st, b, sp.q_start + i, h);
    for (int64_t c = lane; c < p.head_dim_v; c += 32)
      acc += cuda::to_float(o[c * p.out_st.d]) * cuda::to_float(d[c * p.dout_st.d]);
  }
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) delta[row] = acc;
}

/// Grid (ceil(Sk / 64), ceil(Dx / 64), units in the chunk), kThreads threads. Unit u = b * Hkv + g
/// (its row blocks are the consecutive ids [u * G * nrb, (u + 1) * G * nrb), G = Hq / Hkv).
/// acc[u][j][c] += sum over the chunk's rows i of that unit of W[i][j] * Y[i][c], where
///   kDk = true : W = dS (w2), Y = q,  Dx = D   (dK);   kDk = false: W = dropout(P), Y = dO (dV).
template <typename T, bool kDk>
__global__ void __launch_bounds__(kThreads)
    wty_kernel(const Params p, int64_t t0, int64_t t1, int64_t nrb, const float* __restrict__ w,
               int64_t ldw, float* __restrict__ accum, int64_t unit0) {
  const int64_t u = unit0 + blockIdx.z;
  const int64_t b = u / p.heads_kv;  // the unit's query heads h: (t / nrb) % Hq below
  const SeqSpan sp = seq_span(p, b);
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kCols;
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * kCols;
  const int64_t dx = kDk ? p.head_dim : p.head_dim_v;
  if (j0 >= sp.sk || c0 >= dx) return;
  const int64_t nkeys = min(static_cast<int64_t>(kCols), sp.sk - j0);
  const int64_t unit_first = u * p.group * nrb;
  const int64_t ta = max(t0, unit_first), tb = min(t1, unit_first + p.group * nrb);
  const void* ybase = kDk ? p.q : p.dout;
  const Strides4& yst = kDk ? p.q_st : p.dout_st;

  __shared__ SmemTile as, bs;
  float acc[4][4] = {};
  for (int64_t t = ta; t < tb; ++t) {  // fixed order over row blocks: deterministic
    const int64_t h = (t / nrb) % p.heads_q, i0 = (t % nrb) * kRows;
    if (i0 >= sp.sq) continue;
    const int64_t nrows = min(static_cast<int64_t>(kRows), sp.sq - i0);
    if (tile_invisible(p, i0, i0 + nrows - 1, j0, j0 + nkeys - 1, sp.sq, sp.sk)) continue;
    const float* W = w + (t - t0) * kRows * ldw;
    for (int64_t r0 = 0; r0 < nrows; r0 += kStep) {
      const T* yb = token_ptr<T>(ybase, yst, b, sp.q_start + i0 + r0, h);
      stage_w_by_row(as, W, ldw, r0, nrows, j0, j0 + nkeys - 1);
      stage_features_by_token(bs, yb, yst.s, yst.d, nrows - r0, c0, dx);
      __syncthreads();
      tile_fma(as, bs, acc);
      __syncthreads();
    }
  }
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int a = 0; a < 4; ++a) {
    const int64_t jj = ty + 16 * a;
    if (jj >= nkeys) continue;
    float* dst = accum + (u * p.seqlen_k + j0 + jj) * dx;
    for (int c = 0; c < 4; ++c) {
      const int64_t col = c0 + tx + 16 * c;
      if (col < dx) dst[col] += acc[a][c];
    }
  }
}

/// dk (kDk) or dv [b, k_start + j, g, c] = accum[(u * Sk + j) * Dx + c] for j < sk; grid-stride.
template <typename T, bool kDk>
__global__ void finalize_kernel(const Params p, const float* __restrict__ accum) {
  const int64_t dx = kDk ? p.head_dim : p.head_dim_v;
  const int64_t n = p.batch * p.heads_kv * p.seqlen_k * dx;
  void* base = kDk ? p.dk : p.dv;
  const Strides4& st = kDk ? p.dk_st : p.dv_st;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = e % dx, j = (e / dx) % p.seqlen_k, u = e / (dx * p.seqlen_k);
    const int64_t b = u / p.heads_kv, g = u % p.heads_kv;
    const SeqSpan sp = seq_span(p, b);
    if (j >= sp.sk) continue;
    T* y = static_cast<T*>(base) + b * st.b + (sp.k_start + j) * st.s + g * st.h + c * st.d;
    *y = cuda::from_float<T>(accum[e]);
  }
}

template <typename T>
void run(const Params& p, cudaStream_t stream) {
  const int dev = p.device.index;
  const int64_t nrb = ceil_div(p.seqlen_q, kRows);
  const int64_t total = p.batch * p.heads_q * nrb;
  const int64_t ldw = w_ld(p.seqlen_k);
  const int64_t chunk = chunk_blocks(total, ldw, 2);
  const int64_t units = p.batch * p.heads_kv;
  const int64_t rows = p.batch * p.heads_q * p.seqlen_q;

  // Workspace: [delta: rows | dK acc: units*Sk*D | dV acc: units*Sk*Dv | W1 | W2] (fp32, each
  // 256-byte aligned).
  const size_t delta_bytes = align256(static_cast<size_t>(rows) * sizeof(float));
  const size_t dk_bytes = align256(static_cast<size_t>(units * p.seqlen_k * p.head_dim) * 4);
  const size_t dv_bytes = align256(static_cast<size_t>(units * p.seqlen_k * p.head_dim_v) * 4);
  const size_t w_bytes = align256(static_cast<size_t>(chunk) * kRows * ldw * sizeof(float));
  char* ws = static_cast<char*>(
      cuda::workspace(delta_bytes + dk_bytes + dv_bytes + 2 * w_bytes, dev, stream));
  float* delta = reinterpret_cast<float*>(ws);
  float* dk_acc = reinterpret_cast<float*>(ws + delta_bytes);
  float* dv_acc = reinterpret_cast<float*>(ws + delta_bytes + dk_bytes);
  float* w1 = reinterpret_cast<float*>(ws + delta_bytes + dk_bytes + dv_bytes);
  float* w2 = reinterpret_cast<float*>(ws + delta_bytes + dk_bytes + dv_bytes + w_bytes);
  ATTNKIT_CUDA_CHECK(cudaMemsetAsync(dk_acc, 0, dk_bytes + dv_bytes, stream));

  if (rows > 0) {
    delta_kernel<T><<<grid_dim(ceil_div(rows, kThreads / 32)), kThreads, 0, stream>>>(p, delta);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
  for (int64_t t0 = 0; t0 < total; t0 += chunk) {
    const int64_t n = std::min(chunk, total - t0);
    if (p.seqlen_k > 0) {
      scores_kernel<T, true>
          <<<dim3(grid_dim(ceil_div(p.seqlen_k, kCols)), grid_dim(n)), kThreads, 0, stream>>>(
              p, t0, nrb, w1, w2, ldw, delta);
      ATTNKIT_CUDA_CHECK_LAUNCH();
    }
    wx_kernel<T, true>
        <<<dim3(grid_dim(ceil_div(p.head_dim, kCols)), grid_dim(n)), kThreads, 0, stream>>>(
            p, t0, nrb, w2, ldw);
    ATTNKIT_CUDA_CHECK_LAUNCH();
    if (p.seqlen_k > 0) {
      const int64_t per_unit = p.group * nrb;
      const int64_t u0 = t0 / per_unit, u1 = (t0 + n - 1) / per_unit;
      const dim3 grid_k(grid_dim(ceil_div(p.seqlen_k, kCols)),
                        grid_dim(ceil_div(p.head_dim, kCols)), grid_dim(u1 - u0 + 1));
      wty_kernel<T, true><<<grid_k, kThreads, 0, stream>>>(p, t0, t0 + n, nrb, w2, ldw, dk_acc, u0);
      ATTNKIT_CUDA_CHECK_LAUNCH();
      if (p.head_dim_v > 0) {
        const dim3 grid_v(grid_k.x, grid_dim(ceil_div(p.head_dim_v, kCols)), grid_k.z);
        wty_kernel<T, false>
            <<<grid_v, kThreads, 0, stream>>>(p, t0, t0 + n, nrb, w1, ldw, dv_acc, u0);
        ATTNKIT_CUDA_CHECK_LAUNCH();
      }
    }
  }
  // dK / dV are written for every key, also keys no query sees (their sums are 0).
  const int64_t nk = units * p.seqlen_k * std::max(p.head_dim, p.head_dim_v);
  if (nk > 0) {
    const unsigned blocks = grid_dim(std::min<int64_t>(ceil_div(nk, kThreads), 65536));
    finalize_kernel<T, true><<<blocks, kThreads, 0, stream>>>(p, dk_acc);
    ATTNKIT_CUDA_CHECK_LAUNCH();
    finalize_kernel<T, false><<<blocks, kThreads, 0, stream>>>(p, dv_acc);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void backward(const Params& p) {
  cuda::DeviceGuard guard(p.device.index);
  const auto stream = static_cast<cudaStream_t>(p.stream);
  dispatch_dtype(p.dtype, [&](auto tag) { run<typename decltype(tag)::type>(p, stream); });
}

}  // namespace attnkit::cuda_math
