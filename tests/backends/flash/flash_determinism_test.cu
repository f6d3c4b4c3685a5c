// Deterministic backward: with `deterministic` set, flash runs the atomic-free kernels (dK/dV and
// dQ in separate kernels with fixed loop orders), so two runs on the same inputs must give
// bit-identical dq/dk/dv — with GQA (dK/dV summed over the group inside one CTA) and causal.
// Without the flag (FA-2 schedule, dQ summed with fp32 atomics) dK/dV are still accumulated in
// registers in a fixed order and must repeat bit for bit; dQ may differ in the last bits and must
// stay close to the deterministic dQ. The forward's split tail repeats bit for bit too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

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

// The forward's split tail (fwd_tail.cuh): the last piece of a tile to arrive merges every piece
// in piece order, so whichever CTA that is, out and lse repeat bit for bit. One tile over 7 CTAs
// (ATTNKIT_FLASH_FWD_TAIL "1:7": 47 key blocks, ~6.7 per piece), three runs; the same forward
// without the split stays within rounding of it.
TEST(FlashDeterminism, SplitTailForwardBitIdentical) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (std::find(std::begin(flash::kBuiltHeadDims), std::end(flash::kBuiltHeadDims), 256) ==
      std::end(flash::kBuiltHeadDims))
    GTEST_SKIP() << "head dim 256 not built";
  const int64_t B = 2, Sq = 128, Sk = 3000, Hq = 2, Hkv = 1, D = 256;
  const DType dt = DType::bf16;
  std::mt19937_64 g(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  Tensor t[4];  // q, k, v, out
  const int64_t rows[4] = {Sq, Sk, Sk, Sq}, heads[4] = {Hq, Hkv, Hkv, Hq};
  for (int i = 0; i < 4; ++i) {
    t[i].rank = 4;
    t[i].shape = {B, rows[i], heads[i], D};
    t[i].host.resize(t[i].numel());
    for (auto& x : t[i].host)
      x = round_to(dt, nd(g));
    upload(t[i], dt, false, false);
  }
  DevBuf lse(B * Hq * Sq * 4);
  TensorView lse_v = TensorView::contiguous(lse.p, DType::f32, {B, Hq, Sq}, Device::cuda(0));
  Options o;
  o.backend = "flash";
  auto run = [&](const char* env, std::vector<float>& out, std::vector<float>& lse_h) {
    ASSERT_EQ(cudaMemset(t[3].dev->p, 0xff, t[3].dev->bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(lse.p, 0xff, B * Hq * Sq * 4), cudaSuccess);
    setenv("ATTNKIT_FLASH_FWD_TAIL", env, 1);
    const std::string ran = forward(
        {t[0].dev_view(dt), t[1].dev_view(dt), t[2].dev_view(dt), t[3].dev_view(dt), lse_v}, o);
    unsetenv("ATTNKIT_FLASH_FWD_TAIL");
    ASSERT_EQ(ran, "flash");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(flash::last_fwd_tail_tiles(), env[0] == '0' ? 0 : 1) << env;
    out = download(t[3], dt);
    lse_h.resize(B * Hq * Sq);
    ASSERT_EQ(cudaMemcpy(lse_h.data(), lse.p, lse_h.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
  };
  std::vector<float> out0, lse0, out, lse_h;
  run("1:7", out0, lse0);
  for (int rep = 0; rep < 2; ++rep) {
    run("1:7", out, lse_h);
    EXPECT_EQ(0, std::memcmp(out.data(), out0.data(), out.size() * sizeof(float))) << "out";
    EXPECT_EQ(0, std::memcmp(lse_h.data(), lse0.data(), lse_h.size() * sizeof(float))) << "lse";
  }
  run("0", out, lse_h);
  const Err eo = compare(out0, out), el = compare(lse0, lse_h);
  EXPECT_EQ(eo.nonfinite + el.nonfinite, 0);
  EXPECT_LE(eo.rel, 5e-3) << "split vs whole out";
  EXPECT_LE(el.max_abs, 1e-4) << "split vs whole lse";
}

}  // namespace
}  // namespace attnkit::flash_test
