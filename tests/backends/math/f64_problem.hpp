// An attention problem held in fp64 host vectors, with Params built by hand, for driving the
// oracle's fp64 core (math_core.hpp, Storage::f64) directly: hand-computed cases and finite
// differences.
//
// Dense layouts: logical q [B, Sq, Hq, D] stored BSHD ([B, Sq, Hq, D]) or BHSD ([B, Hq, Sq, D]);
// varlen: q [total_q, Hq, D] (b strides 0). lse is [B, Hq, Sq] (varlen [Hq, total_q]).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backends/math/math_core.hpp"
#include "core/params.hpp"
#include "core/philox.hpp"

namespace attnkit::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct F64Problem {
  Params p;
  bool bhsd = false;
  std::vector<double> q, k, v, out, dout, dq, dk, dv, lse;
  std::vector<int32_t> cu_q, cu_k;
  std::vector<uint8_t> bool_mask;    // dense [B, Hq, Sq, Sk] unless the test sets strides itself
  std::vector<float> additive_mask;  // f32, same
  std::vector<float> slopes;

  /// Fixed-length problem; every option off, scale 1/sqrt(D), single thread.
  static F64Problem dense(int64_t b, int64_t sq, int64_t sk, int64_t hq, int64_t hkv, int64_t d,
                          int64_t dv, bool bhsd = false) {
    F64Problem x;
    x.bhsd = bhsd;
    Params& p = x.p;
    p.batch = b;
    p.seqlen_q = sq;
    p.seqlen_k = sk;
    p.heads_q = hq;
    p.heads_kv = hkv;
    p.group = hq / hkv;
    p.head_dim = d;
    p.head_dim_v = dv;
    p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    p.num_threads = 1;
    auto st = [&](int64_t s, int64_t h, int64_t e) {
      return bhsd ? Strides4{.b = h * s * e, .s = e, .h = s * e, .d = 1}
                  : Strides4{.b = s * h * e, .s = h * e, .h = e, .d = 1};
    };
    p.q_st = p.dq_st = st(sq, hq, d);
    p.k_st = p.dk_st = st(sk, hkv, d);
    p.v_st = p.dv_st = st(sk, hkv, dv);
    p.out_st = p.dout_st = st(sq, hq, dv);
    p.lse_st = Strides4{.b = hq * sq, .s = 1, .h = sq, .d = 0};
    x.alloc(b * sq * hq, b * sk * hkv);
    return x;
  }

  /// Varlen problem with the given per-sequence lengths (packed BSHD-like [total, H, D]).
  static F64Problem varlen(const std::vector<int32_t>& lens_q, const std::vector<int32_t>& lens_k,
                           int64_t hq, int64_t hkv, int64_t d, int64_t dv) {
    F64Problem x;
    Params& p = x.p;
    x.cu_q = {0};
    x.cu_k = {0};
    int32_t max_q = 0, max_k = 0;
    for (size_t i = 0; i < lens_q.size(); ++i) {
      x.cu_q.push_back(x.cu_q.back() + lens_q[i]);
      x.cu_k.push_back(x.cu_k.back() + lens_k[i]);
      max_q = std::max(max_q, lens_q[i]);
      max_k = std::max(max_k, lens_k[i]);
    }
    const int64_t tq = x.cu_q.back(), tk = x.cu_k.back();
    p.varlen = true;
    p.batch = static_cast<int64_t>(lens_q.size());
    p.seqlen_q = max_q;
    p.seqlen_k = max_k;
    p.heads_q = hq;
    p.heads_kv = hkv;
    p.group = hq / hkv;
    p.head_dim = d;
    p.head_dim_v = dv;
    p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    p.num_threads = 1;
    p.q_st = p.dq_st = Strides4{.b = 0, .s = hq * d, .h = d, .d = 1};
    p.k_st = p.dk_st = Strides4{.b = 0, .s = hkv * d, .h = d, .d = 1};
    p.v_st = p.dv_st = Strides4{.b = 0, .s = hkv * dv, .h = dv, .d = 1};
    p.out_st = p.dout_st = Strides4{.b = 0, .s = hq * dv, .h = dv, .d = 1};
    p.lse_st = Strides4{.b = 0, .s = 1, .h = tq, .d = 0};
    x.alloc(tq * hq, tk * hkv);
    return x;
  }

  /// N(0, 1) inputs and dout.
  void fill_random(uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    for (auto* t : {&q, &k, &v, &dout})
      for (double& x : *t)
        x = n(gen);
  }

  // Element indices (logical coordinates -> vector index).
  int64_t qi(int64_t b, int64_t i, int64_t h, int64_t c) const { return at(p.q_st, b, i, h, c); }
  int64_t ki(int64_t b, int64_t j, int64_t g, int64_t c) const { return at(p.k_st, b, j, g, c); }
  int64_t vi(int64_t b, int64_t j, int64_t g, int64_t c) const { return at(p.v_st, b, j, g, c); }
  int64_t oi(int64_t b, int64_t i, int64_t h, int64_t c) const { return at(p.out_st, b, i, h, c); }
  int64_t li(int64_t b, int64_t h, int64_t i) const {
    return b * p.lse_st.b + h * p.lse_st.h + i * p.lse_st.s;
  }

  void use_bool_mask() {
    bool_mask.assign(static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q * p.seqlen_k), 1);
    p.mask_kind = MaskKind::keep_bool;
    p.mask_dtype = DType::b8;
    p.mask = bool_mask.data();
    p.mask_st = dense_mask_strides();
  }
  void use_additive_mask() {
    additive_mask.assign(static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q * p.seqlen_k), 0.f);
    p.mask_kind = MaskKind::additive;
    p.mask_dtype = DType::f32;
    p.mask = additive_mask.data();
    p.mask_st = dense_mask_strides();
  }
  int64_t mask_index(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return b * p.mask_st.b + h * p.mask_st.h + i * p.mask_st.s + j * p.mask_st.d;
  }
  /// Slopes [Hq] (per_batch: [B, Hq]) = 0.3 * (h + 1) (+ 0.1 * b).
  void use_alibi(bool per_batch) {
    slopes.clear();
    for (int64_t b = 0; b < (per_batch ? p.batch : 1); ++b)
      for (int64_t h = 0; h < p.heads_q; ++h)
        slopes.push_back(0.3f * (h + 1) + 0.1f * b);
    p.alibi = slopes.data();
    p.alibi_st_h = 1;
    p.alibi_st_b = per_batch ? p.heads_q : 0;
  }
  void use_dropout(double prob, uint64_t seed, uint64_t offset) {
    p.dropout_p = static_cast<float>(prob);
    p.dropout_threshold = dropout_threshold_for(prob);
    p.dropout_rescale = static_cast<float>(1.0 / (1.0 - prob));
    p.seed = seed;
    p.offset = offset;
  }

  void forward() {
    bind();
    math_core::forward(p, math_core::Storage::f64, lse.data());
  }
  void backward() {
    bind();
    math_core::backward(p, math_core::Storage::f64);
  }
  /// L = sum(dout * out) after a forward.
  double loss() {
    forward();
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i)
      l += dout[i] * out[i];
    return l;
  }

 private:
  void alloc(int64_t q_rows, int64_t k_rows) {
    const auto dim = p.head_dim, dim_v = p.head_dim_v;
    q.assign(static_cast<size_t>(q_rows * dim), 0.0);
    dq = q;
    out.assign(static_cast<size_t>(q_rows * dim_v), 0.0);
    dout = out;
    k.assign(static_cast<size_t>(k_rows * dim), 0.0);
    dk = k;
    v.assign(static_cast<size_t>(k_rows * dim_v), 0.0);
    dv = v;
    lse.assign(static_cast<size_t>(q_rows), 0.0);
  }
  Strides4 dense_mask_strides() const {
    const int64_t sq = p.seqlen_q, sk = p.seqlen_k;
    return Strides4{.b = p.heads_q * sq * sk, .s = sk, .h = sq * sk, .d = 1};  // s = i, d = j
  }
  void bind() {
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.out = out.data();
    p.dout = dout.data();
    p.dq = dq.data();
    p.dk = dk.data();
    p.dv = dv.data();
    p.lse = nullptr;  // fp64 lse goes to `lse`
    if (p.varlen) {
      p.cu_seqlens_q = cu_q.data();
      p.cu_seqlens_k = cu_k.data();
    }
  }
  static int64_t at(const Strides4& st, int64_t b, int64_t s, int64_t h, int64_t c) {
    return b * st.b + s * st.s + h * st.h + c * st.d;
  }
};

}  // namespace attnkit::testing
