// The README's C++ example, compiled against an installed attnkit (find_package) and run.
#include <attnkit/attnkit.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const int64_t B = 2, S = 128, H = 8, Hkv = 2, D = 64;  // GQA: 8 query heads share 2 kv heads
  std::vector<float> q(B * S * H * D, 0.1f), k(B * S * Hkv * D, 0.2f), v(B * S * Hkv * D, 0.3f);
  std::vector<float> out(B * S * H * D), lse(B * H * S);
  attnkit::ForwardArgs a;
  a.q = attnkit::TensorView::contiguous(q.data(), attnkit::DType::f32, {B, S, H, D});
  a.k = attnkit::TensorView::contiguous(k.data(), attnkit::DType::f32, {B, S, Hkv, D});
  a.v = attnkit::TensorView::contiguous(v.data(), attnkit::DType::f32, {B, S, Hkv, D});
  a.out = attnkit::TensorView::contiguous(out.data(), attnkit::DType::f32, {B, S, H, D});
  a.lse = attnkit::TensorView::contiguous(lse.data(), attnkit::DType::f32, {B, H, S});
  attnkit::Options o;
  o.causal = attnkit::Causal::bottom_right;
  std::string ran = attnkit::forward(a, o);  // throws attnkit::Error naming any bad argument

  // v is constant 0.3, so every output is 0.3; row 0 sees one key, so lse = its score.
  for (float x : out)
    if (std::fabs(x - 0.3f) > 1e-6f) return std::printf("wrong output %g\n", x), 1;
  const float score0 = 0.1f * 0.2f * D / std::sqrt(float(D));
  if (std::fabs(lse[0] - score0) > 1e-5f) return std::printf("wrong lse %g\n", lse[0]), 1;
  std::printf("quickstart: ran %s, out and lse correct\n", ran.c_str());
  return 0;
}
