#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "backends/cudnn/aux_kernels.hpp"
#include "core/score_policy.hpp"
#include "cuda/cuda_check.hpp"

namespace attnkit::cudnn {
namespace {

constexpr int kThreads = 256;

cudaStream_t as_stream(void* s) {
  return static_cast<cudaStream_t>(s);
}

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 64 ? 65535 * 64 : b));
}

// ---- sequence lengths and ragged offsets ---------------------------------------------------

__global__ void seq_arrays_kernel(Params p, SeqArrays a) {
  const int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (b > p.batch) return;
  // Token offset of sequence b's first row (b = batch: the total).
  const int64_t q0 = p.varlen ? p.cu_seqlens_q[b] : b * p.seqlen_q;
  const int64_t k0 = p.varlen ? p.cu_seqlens_k[b] : b * p.seqlen_k;
  for (int t = 0; t < a.n_ragged; ++t)
    a.ragged[t][b] = static_cast<int32_t>((a.q_side[t] ? q0 : k0) * a.token_stride[t]);
  if (b < p.batch && a.seq_q != nullptr) {
    const SeqSpan s = seq_span(p, b);
    a.seq_q[b] = static_cast<int32_t>(s.sq);
    a.seq_k[b] = static_cast<int32_t>(s.sk);
  }
}

// ---- materialized bias ---------------------------------------------------------------------

__device__ float mask_value(const Params& p, int64_t b, int64_t h, int64_t i, int64_t j,
                            bool& visible) {
  visible = true;
  if (p.mask_kind == MaskKind::none) return 0.f;
  const int64_t off = b * p.mask_st.b + h * p.mask_st.h + i * p.mask_st.s + j * p.mask_st.d;
  if (p.mask_kind == MaskKind::keep_bool) {
    visible = static_cast<const uint8_t*>(p.mask)[off] != 0;
    return 0.f;
  }
  float v = 0.f;
  switch (p.mask_dtype) {
    case DType::f32:
      v = static_cast<const float*>(p.mask)[off];
      break;
    case DType::f16:
      v = __half2float(static_cast<const __half*>(p.mask)[off]);
      break;
    case DType::bf16:
      v = __bfloat162float(static_cast<const __nv_bfloat16*>(p.mask)[off]);
      break;
    default:
      break;
  }
  if (v == -INFINITY) visible = false;
  return v;
}

template <typename T>
__global__ void bias_kernel(Params p, Mapping m, T* bias) {
  const int64_t sq = p.seqlen_q, sk = p.seqlen_k;
  const int64_t n = m.bias_b * m.bias_h * sq * sk;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = idx % sk;
    const int64_t i = (idx / sk) % sq;
    const int64_t h = (idx / (sk * sq)) % m.bias_h;
    const int64_t b = idx / (sk * sq * m.bias_h);
    bool visible = true;
    float v = mask_value(p, b, h, i, j, visible);
    if (m.bias_structural && !structurally_visible(p, i, j, sq, sk)) visible = false;
    if (!visible) v = -INFINITY;
    if constexpr (std::is_same_v<T, __half>)
      bias[idx] = __float2half_rn(v);
    else
      bias[idx] = __float2bfloat16_rn(v);
  }
}

// ---- stats ---------------------------------------------------------------------------------

__global__ void stats_epilogue_kernel(Params p, const float* stats, int64_t sq_graph,
                                      bool fix_empty) {
  const int64_t n = p.batch * p.heads_q * p.seqlen_q;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = idx % p.seqlen_q;
    const int64_t h = (idx / p.seqlen_q) % p.heads_q;
    const int64_t b = idx / (p.seqlen_q * p.heads_q);
    const SeqSpan s = seq_span(p, b);
    if (i >= s.sq) continue;
    const float* src = stats + (b * p.heads_q + h) * sq_graph + i;
    float l = *src;
    if (fix_empty && !isfinite(l)) {
      l = -INFINITY;
      uint16_t* o = static_cast<uint16_t*>(p.out) + b * p.out_st.b + (s.q_start + i) * p.out_st.s +
                    h * p.out_st.h;
      for (int64_t d = 0; d < p.head_dim_v; ++d)
        o[d * p.out_st.d] = 0;  // +0 in f16 and bf16
    }
    if (p.lse != nullptr) {
      float* dst = p.lse + b * p.lse_st.b + h * p.lse_st.h + (s.q_start + i) * p.lse_st.s;
      *dst = l;  // also when dst == src (direct stats): writes the fixed value in place
    }
  }
}

__global__ void stats_prologue_kernel(Params p, float* stats, int64_t sq_graph) {
  const int64_t n = p.batch * p.heads_q * sq_graph;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = idx % sq_graph;
    const int64_t h = (idx / sq_graph) % p.heads_q;
    const int64_t b = idx / (sq_graph * p.heads_q);
    const SeqSpan s = seq_span(p, b);
    float l = 0.f;
    if (i < s.sq) {
      l = p.lse[b * p.lse_st.b + h * p.lse_st.h + (s.q_start + i) * p.lse_st.s];
      if (!isfinite(l)) l = 0.f;
    }
    stats[idx] = l;
  }
}

// ---- fills for empty problems --------------------------------------------------------------

__global__ void zero_rows_kernel(Params p, uint16_t* base, Strides4 st, int64_t s_max, int64_t h_n,
                                 int64_t d_n, bool q_side, bool only_if_other_empty) {
  const int64_t n = p.batch * s_max * h_n * d_n;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t d = idx % d_n;
    const int64_t h = (idx / d_n) % h_n;
    const int64_t i = (idx / (d_n * h_n)) % s_max;
    const int64_t b = idx / (d_n * h_n * s_max);
    const SeqSpan s = seq_span(p, b);
    const int64_t len = q_side ? s.sq : s.sk;
    const int64_t start = q_side ? s.q_start : s.k_start;
    if (i >= len || (only_if_other_empty && (q_side ? s.sk : s.sq) != 0)) continue;
    base[b * st.b + (start + i) * st.s + h * st.h + d * st.d] = 0;
  }
}

__global__ void fill_lse_kernel(Params p) {
  const int64_t n = p.batch * p.heads_q * p.seqlen_q;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = idx % p.seqlen_q;
    const int64_t h = (idx / p.seqlen_q) % p.heads_q;
    const int64_t b = idx / (p.seqlen_q * p.heads_q);
    const SeqSpan s = seq_span(p, b);
    if (i >= s.sq) continue;
    p.lse[b * p.lse_st.b + h * p.lse_st.h + (s.q_start + i) * p.lse_st.s] = -INFINITY;
  }
}

}  // namespace

void launch_seq_arrays(const Params& p, const SeqArrays& a, void* stream) {
  seq_arrays_kernel<<<blocks_for(p.batch + 1), kThreads, 0, as_stream(stream)>>>(p, a);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

void launch_build_bias(const Params& p, const Mapping& m, void* bias, void* stream) {
  const int64_t n = m.bias_b * m.bias_h * p.seqlen_q * p.seqlen_k;
  if (p.dtype == DType::f16)
    bias_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(p, m,
                                                                   static_cast<__half*>(bias));
  else
    bias_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
        p, m, static_cast<__nv_bfloat16*>(bias));
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

void launch_stats_epilogue(const Params& p, const float* stats, int64_t sq_graph, bool fix_empty,
                           void* stream) {
  const int64_t n = p.batch * p.heads_q * p.seqlen_q;
  stats_epilogue_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(p, stats, sq_graph,
                                                                           fix_empty);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

void launch_stats_prologue(const Params& p, float* stats, int64_t sq_graph, void* stream) {
  const int64_t n = p.batch * p.heads_q * sq_graph;
  stats_prologue_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(p, stats, sq_graph);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

void launch_zero_rows(const Params& p, void* base, const Strides4& st, int64_t s, int64_t h,
                      int64_t d, bool q_side, void* stream, bool only_if_other_empty) {
  const int64_t n = p.batch * s * h * d;
  if (n == 0) return;
  zero_rows_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
      p, static_cast<uint16_t*>(base), st, s, h, d, q_side, only_if_other_empty);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

void launch_fill_lse_neg_inf(const Params& p, void* stream) {
  const int64_t n = p.batch * p.heads_q * p.seqlen_q;
  if (n == 0 || p.lse == nullptr) return;
  fill_lse_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(p);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

}  // namespace attnkit::cudnn
