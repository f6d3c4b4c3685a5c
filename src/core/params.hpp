// Params: the one plain struct every backend receives (DESIGN.md §1). Built by the resolver
// (resolve.cpp) after validation; no backend re-validates or re-derives anything in it.
// Trivially copyable so CUDA kernels can take it by value.
//
// Index conventions (all strides in elements, 64-bit):
//   q   element (b, i, h, d)  at q  + b*q_st.b + i*q_st.s + h*q_st.h + d*q_st.d
//   k/v element (b, j, g, d)  with g = h / group (GQA: Hq = group * Hkv, K/V never expanded)
//   lse element (b, h, i)     at lse + b*lse_st.b + h*lse_st.h + i*lse_st.s
//   mask element (b, h, i, j) at mask + b*mask_st.b + h*mask_st.h + i*mask_st.s + j*mask_st.d
//                              (broadcast dims have stride 0)
// Varlen: batch = number of sequences, the b strides are 0, and sequence b's rows start at
// cu_seqlens_q[b] (q/out/dq/lse) and cu_seqlens_k[b] (k/v/dk/dv). seqlen_q/k are the maxima.
#pragma once

#include <cstdint>
#include <type_traits>

#include "attnkit/options.hpp"
#include "attnkit/tensor.hpp"

namespace attnkit {

struct Strides4 {
  int64_t b = 0, s = 0, h = 0, d = 0;
};

enum class MaskKind : uint8_t { none, keep_bool, additive };

struct Params {
  // ---- problem --------------------------------------------------------------------------
  int64_t batch = 0;       // B (varlen: number of sequences)
  int64_t seqlen_q = 0;    // Sq (varlen: max over sequences)
  int64_t seqlen_k = 0;    // Sk (varlen: max over sequences)
  int64_t heads_q = 0;     // Hq
  int64_t heads_kv = 0;    // Hkv
  int64_t group = 1;       // Hq / Hkv
  int64_t head_dim = 0;    // D
  int64_t head_dim_v = 0;  // Dv
  DType dtype = DType::f32;
  Device device{};
  bool is_backward = false;

  // ---- tensors --------------------------------------------------------------------------
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;  // forward: written; backward: read (the forward's out)
  Strides4 q_st, k_st, v_st, out_st;
  float* lse = nullptr;  // forward: optional output; backward: required input
  Strides4 lse_st;       // uses b, h, s
  // backward only
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  Strides4 dout_st, dq_st, dk_st, dv_st;

  // ---- options (resolved) ---------------------------------------------------------------
  float scale = 1.0f;    // resolved softmax scale
  float softcap = 0.0f;  // 0 = off
  Causal causal = Causal::none;
  int64_t window_left = -1;  // -1 = unbounded
  int64_t window_right = -1;
  const float* alibi = nullptr;  // slopes; element (b, h) at alibi + b*alibi_st_b + h*alibi_st_h
  int64_t alibi_st_b = 0, alibi_st_h = 0;
  MaskKind mask_kind = MaskKind::none;
  const void* mask = nullptr;
  DType mask_dtype = DType::b8;
  Strides4 mask_st;  // (b, h, i, j) -> (b, h, s, d) fields
  float dropout_p = 0.0f;
  uint32_t dropout_threshold = 0;  // keep iff (philox word >> 8) >= threshold; 0 = no dropout
  float dropout_rescale = 1.0f;    // 1 / (1 - p)
  uint64_t seed = 0, offset = 0;
  bool deterministic = false;
  bool varlen = false;
  const int32_t* cu_seqlens_q = nullptr;  // [batch + 1], on the tensors' device
  const int32_t* cu_seqlens_k = nullptr;
  const int32_t* cu_seqlens_q_host = nullptr;  // host copy when the resolver made one, else null
  const int32_t* cu_seqlens_k_host = nullptr;
  bool max_seqlens_given = true;     // false: seqlen_q/k were read from cu_seqlens by the resolver

  // ---- execution ------------------------------------------------------------------------
  void* stream = nullptr;  // cudaStream_t
  int num_threads = 0;     // CPU backends: 0 = default
  // ---- varlen (appended in session 24, so the fields above keep their offsets) -------------
  int64_t total_q = 0, total_k = 0;  // varlen: q.shape[0] and k.shape[0] (the packed rows)

  bool has_mask() const { return mask_kind != MaskKind::none; }
  bool has_dropout() const { return dropout_threshold != 0; }
};

static_assert(std::is_trivially_copyable_v<Params>, "Params is passed to kernels by value");

}  // namespace attnkit
