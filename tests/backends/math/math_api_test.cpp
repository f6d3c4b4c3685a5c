// The oracle through the public API (attnkit::forward / backward with backend "math") against
// its fp64 core on hand-built Params: proves that what reaches the oracle from the resolver is
// the problem the caller described (mask and ALiBi indexing, lse layout, varlen offsets), which
// math-vs-math comparisons in the check harness cannot see.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attnkit/attention.hpp"
#include "backends/math/f64_problem.hpp"

namespace attnkit::testing {
namespace {

std::vector<float> to_f32(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

TEST(MathApi, DenseWithMaskAlibiAndLseMatchesCore) {
  // Distinct B, Hq, Sq, Sk so any mixed-up stride shows.
  const int64_t B = 2, Sq = 3, Sk = 5, Hq = 4, Hkv = 2, D = 8, Dv = 6;
  F64Problem x = F64Problem::dense(B, Sq, Sk, Hq, Hkv, D, Dv);
  x.fill_random(99);
  x.use_additive_mask();  // dense [B, Hq, Sq, Sk]
  for (size_t e = 0; e < x.additive_mask.size(); ++e)
    x.additive_mask[e] = static_cast<float>(e % 7) * 0.5f - (e % 11 == 0 ? INFINITY : 0.f);
  x.use_alibi(true);
  x.p.causal = Causal::bottom_right;
  x.p.scale = 0.375f;
  // Inputs as f32 (exactly representable after rounding the fp64 values once).
  for (auto* t : {&x.q, &x.k, &x.v, &x.dout})
    for (double& e : *t)
      e = static_cast<float>(e);
  x.forward();
  x.backward();

  std::vector<float> q = to_f32(x.q), k = to_f32(x.k), v = to_f32(x.v), dout = to_f32(x.dout);
  std::vector<float> out(x.out.size(), NAN), lse(x.lse.size(), NAN);
  ForwardArgs fa;
  fa.q = TensorView::contiguous(q.data(), DType::f32, {B, Sq, Hq, D});
  fa.k = TensorView::contiguous(k.data(), DType::f32, {B, Sk, Hkv, D});
  fa.v = TensorView::contiguous(v.data(), DType::f32, {B, Sk, Hkv, Dv});
  fa.out = TensorView::contiguous(out.data(), DType::f32, {B, Sq, Hq, Dv});
  fa.lse = TensorView::contiguous(lse.data(), DType::f32, {B, Hq, Sq});
  Options o;
  o.backend = "math";
  o.scale = 0.375;
  o.causal = Causal::bottom_right;
  o.mask = TensorView::contiguous(x.additive_mask.data(), DType::f32, {B, Hq, Sq, Sk});
  o.alibi_slopes = TensorView::contiguous(x.slopes.data(), DType::f32, {B, Hq});
  ASSERT_EQ(forward(fa, o), "math");
  for (size_t e = 0; e < out.size(); ++e)
    ASSERT_EQ(out[e], static_cast<float>(x.out[e])) << "out[" << e << "]";
  for (size_t e = 0; e < lse.size(); ++e)
    ASSERT_EQ(lse[e], static_cast<float>(x.lse[e])) << "lse[" << e << "]";

  std::vector<float> dq(q.size(), NAN), dk(k.size(), NAN), dv(v.size(), NAN);
  BackwardArgs ba;
  ba.dout = TensorView::contiguous(dout.data(), DType::f32, {B, Sq, Hq, Dv});
  ba.q = fa.q;
  ba.k = fa.k;
  ba.v = fa.v;
  ba.out = fa.out;
  ba.lse = fa.lse;
  ba.dq = TensorView::contiguous(dq.data(), DType::f32, {B, Sq, Hq, D});
  ba.dk = TensorView::contiguous(dk.data(), DType::f32, {B, Sk, Hkv, D});
  ba.dv = TensorView::contiguous(dv.data(), DType::f32, {B, Sk, Hkv, Dv});
  ASSERT_EQ(backward(ba, o), "math");
  for (size_t e = 0; e < dq.size(); ++e)
    ASSERT_EQ(dq[e], static_cast<float>(x.dq[e])) << e;
  for (size_t e = 0; e < dk.size(); ++e)
    ASSERT_EQ(dk[e], static_cast<float>(x.dk[e])) << e;
  for (size_t e = 0; e < dv.size(); ++e)
    ASSERT_EQ(dv[e], static_cast<float>(x.dv[e])) << e;
}

TEST(MathApi, VarlenMatchesCore) {
  const std::vector<int32_t> lq = {3, 0, 4}, lk = {2, 5, 0};
  F64Problem x = F64Problem::varlen(lq, lk, 2, 1, 4, 3);
  x.fill_random(17);
  for (auto* t : {&x.q, &x.k, &x.v})
    for (double& e : *t)
      e = static_cast<float>(e);
  x.p.causal = Causal::top_left;
  x.forward();
  const int64_t tq = 7, tk = 7;
  std::vector<float> q = to_f32(x.q), k = to_f32(x.k), v = to_f32(x.v);
  std::vector<float> out(x.out.size(), NAN), lse(x.lse.size(), NAN);
  ForwardArgs fa;
  fa.q = TensorView::contiguous(q.data(), DType::f32, {tq, 2, 4});
  fa.k = TensorView::contiguous(k.data(), DType::f32, {tk, 1, 4});
  fa.v = TensorView::contiguous(v.data(), DType::f32, {tk, 1, 3});
  fa.out = TensorView::contiguous(out.data(), DType::f32, {tq, 2, 3});
  fa.lse = TensorView::contiguous(lse.data(), DType::f32, {2, tq});
  Options o;
  o.backend = "math";
  o.causal = Causal::top_left;
  o.cu_seqlens_q = TensorView::contiguous(x.cu_q.data(), DType::i32, {4});
  o.cu_seqlens_k = TensorView::contiguous(x.cu_k.data(), DType::i32, {4});
  ASSERT_EQ(forward(fa, o), "math");
  for (size_t e = 0; e < out.size(); ++e)
    ASSERT_EQ(out[e], static_cast<float>(x.out[e])) << e;
  for (size_t e = 0; e < lse.size(); ++e)
    ASSERT_EQ(lse[e], static_cast<float>(x.lse[e])) << e;
}

}  // namespace
}  // namespace attnkit::testing
