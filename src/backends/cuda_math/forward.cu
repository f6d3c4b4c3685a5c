// cuda_math forward: per chunk of row blocks, scores -> softmax (+ lse, dropout) -> W . V.
#include "backends/cuda_math/cuda_math.hpp"
#include "backends/cuda_math/kernels.cuh"
#include "backends/cuda_math/launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::cuda_math {
namespace {

/// One block per workspace row (grid = chunk rows). Turns the row's scores into
/// dropout(softmax) in place and writes lse; a row with no visible key gets P = 0, lse = -inf.
__global__ void __launch_bounds__(kThreads)
    softmax_kernel(const Params p, int64_t t0, int64_t nrb, float* __restrict__ w, int64_t ldw) {
  __shared__ float scratch[kThreads / 32];
  const RowBlock rb = row_block(p, t0 + blockIdx.x / kRows, nrb);
  const int64_t i = rb.i0 + blockIdx.x % kRows;
  const int64_t sk = rb.span.sk;
  if (i >= rb.span.sq) return;  // whole block returns together: no barrier divergence
  float* row = w + static_cast<int64_t>(blockIdx.x) * ldw;

  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < sk; j += kThreads)
    m = fmaxf(m, row[j]);
  m = block_max(m, scratch);
  float lse = -INFINITY;
  if (m != -INFINITY) {
    float l = 0.f;
    for (int64_t j = threadIdx.x; j < sk; j += kThreads)
      l += expf(row[j] - m);
    l = block_sum(l, scratch);
    lse = m + logf(l);
  }
  for (int64_t j = threadIdx.x; j < sk; j += kThreads) {
    const float s = row[j];
    const float prob = (lse == -INFINITY || s == -INFINITY) ? 0.f : expf(s - lse);
    row[j] = kept(p, rb.b, rb.h, i, j) ? prob * p.dropout_rescale : 0.f;
  }
  if (p.lse != nullptr && threadIdx.x == 0)
    p.lse[rb.b * p.lse_st.b + rb.h * p.lse_st.h + (rb.span.q_start + i) * p.lse_st.s] = lse;
}

template <typename T>
void run(const Params& p, cudaStream_t stream) {
  const int64_t nrb = ceil_div(p.seqlen_q, kRows);
  const int64_t total = p.batch * p.heads_q * nrb;
  if (total == 0) return;
  const int64_t ldw = w_ld(p.seqlen_k);
  const int64_t chunk = chunk_blocks(total, ldw, 1);
  float* w = static_cast<float*>(cuda::workspace(
      static_cast<size_t>(chunk) * kRows * ldw * sizeof(float), p.device.index, stream));
  for (int64_t t0 = 0; t0 < total; t0 += chunk) {
    const int64_t n = std::min(chunk, total - t0);
    if (p.seqlen_k > 0) {
      scores_kernel<T, false>
          <<<dim3(grid_dim(ceil_div(p.seqlen_k, kCols)), grid_dim(n)), kThreads, 0, stream>>>(
              p, t0, nrb, w, nullptr, ldw, nullptr);
      ATTNKIT_CUDA_CHECK_LAUNCH();
    }
    softmax_kernel<<<grid_dim(n * kRows), kThreads, 0, stream>>>(p, t0, nrb, w, ldw);
    ATTNKIT_CUDA_CHECK_LAUNCH();
    if (p.head_dim_v > 0) {
      wx_kernel<T, false>
          <<<dim3(grid_dim(ceil_div(p.head_dim_v, kCols)), grid_dim(n)), kThreads, 0, stream>>>(
              p, t0, nrb, w, ldw);
      ATTNKIT_CUDA_CHECK_LAUNCH();
    }
  }
}

}  // namespace

void forward(const Params& p) {
  cuda::DeviceGuard guard(p.device.index);
  const auto stream = static_cast<cudaStream_t>(p.stream);
  dispatch_dtype(p.dtype, [&](auto tag) { run<typename decltype(tag)::type>(p, stream); });
}

}  // namespace attnkit::cuda_math
