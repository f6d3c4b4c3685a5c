// Deterministic backward: with `deterministic` set, flash runs the atomic-free kernels (dK/dV and
// dQ in separate kernels with fixed loop orders), so two runs on the same inputs must give
// bit-identical dq/dk/dv — with GQA (dK/dV summed over the group inside one CTA) and causal.
// Without the flag (FA-2 schedule, dQ summed with fp32 atomics) dK/dV are still accumulated in
// registers in a fixed order and must repeat bit for bit; dQ may differ in the last bits and must
// stay close to the deterministic dQ.
#include <gtest/gtest.h>

#include "common/cuda_skip.hpp"
#include "flash_test_util.cuh"

namespace attnkit::flash_test {
namespace {

TEST(FlashDeterminism, BackwardBitIdentical) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const int64_t B = 2, S = 300, Hq = 8, Hkv = 2, D = flash::kBuiltHeadDims[0];
  const DType dt = DType::bf16;
  std::mt19937_64 g(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  Tensor t[8];  // q, k, v, out, dout, dq, dk, dv
  const int64_t heads[8] = {Hq, Hkv, Hkv, Hq, Hq, Hq, Hkv, Hkv};
  for (int i = 0; i < 8; ++i) {
    t[i].rank = 4;
    t[i].shape = {B, S, heads[i], D};
    t[i].host.resize(t[i].numel());
    for (auto& x : t[i].host)
      x = round_to(dt, nd(g));
    upload(t[i], dt, false, false);
  }
  DevBuf lse(B * Hq * S * 4);
  TensorView lse_v = TensorView::contiguous(lse.p, DType::f32, {B, Hq, S}, Device::cuda(0));
  std::vector<float> det_dq;  // dq of the deterministic run, the reference for the atomic one
  for (bool flag : {true, false}) {
    Options o;
    o.backend = "flash";
    o.causal = Causal::bottom_right;
    o.deterministic = flag;
    ASSERT_EQ(
        forward({t[0].dev_view(dt), t[1].dev_view(dt), t[2].dev_view(dt), t[3].dev_view(dt), lse_v},
                o),
        "flash");
    std::vector<float> first[3];
    for (int rep = 0; rep < 2; ++rep) {
      for (int k = 5; k < 8; ++k)  // poison: every element must be written
        ASSERT_EQ(cudaMemset(t[k].dev->p, 0xff, t[k].dev->bytes), cudaSuccess);
      ASSERT_EQ(backward({t[4].dev_view(dt), t[0].dev_view(dt), t[1].dev_view(dt),
                          t[2].dev_view(dt), t[3].dev_view(dt), lse_v, t[5].dev_view(dt),
                          t[6].dev_view(dt), t[7].dev_view(dt)},
                         o),
                "flash");
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (int k = 0; k < 3; ++k) {
        std::vector<float> got = download(t[5 + k], dt);
        if (rep == 0) {
          first[k] = got;
        } else if (flag || k > 0) {
          EXPECT_EQ(0, std::memcmp(got.data(), first[k].data(), got.size() * sizeof(float)))
              << "gradient " << k << " differs between runs (deterministic=" << flag << ")";
        }
      }
    }
    if (flag) {
      det_dq = first[0];
    } else {
      const Err e = compare(first[0], det_dq);
      EXPECT_EQ(e.nonfinite, 0) << "atomic dq";
      EXPECT_LE(e.rel, 1e-2) << "atomic dq vs deterministic dq";
    }
  }
}

}  // namespace
}  // namespace attnkit::flash_test
