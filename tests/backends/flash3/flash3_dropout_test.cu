// flash3's dropout (session 39; dropout.cuh): the forward's mask and varlen builds (mainloop.cuh
// kVarDropout; Philox draws shared by lane pairs; D 96 / 192 on the narrow mask build since
// session 40) and the backward (bwd_kernel.cuh kModDropout, kModMaskDropout at D <= 128,
// bwd_kernel_d256.cuh kDrop at D 192 / 256 since session 40; draws shared by 4 lanes).
// - KeepMaskEqualsPhilox: with V the identity (Sk = D) out[i, j] is P[i, j] / (1 - p) where
//   (i, j) is kept and exactly 0 where it is dropped, so the kernel's pattern must equal
//   core/philox.hpp's dropout_keep() for every (b, h, i, j): several query tiles, batches and
//   heads (the counter's words 1 and 2), D 256's 64-key blocks (word 0 past the first block).
// - Fwd/Flash3Dropout: forward and lse against the `math` oracle (the same Philox rule), with
//   causal, GQA, Sq != Sk, softcap / ALiBi / a window, bool and additive masks, varlen (the
//   counter's b is the sequence, i / j its rows), f16 and bf16; each case checks that the dropout
//   kernel ran (kDropoutSlot).
// - Bwd/Flash3Dropout: the same cases backward too (dq, dk, dv against the oracle's, from
//   flash3's own forward), at every head dim since session 40 (D 96 / 192 dense only; D 192 /
//   256 on bwd_kernel_d256's kDrop kernel): a wrong keep bit in dS or dV moves the gradients past
//   the tolerance.
// - What flash3 does not run with dropout is declined with the reason named (the dispatcher falls
//   back to `flash`, which draws the same mask): varlen at D 96 / 192, a mask with softcap in the
//   D <= 128 backward, the deterministic backward.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attnkit/attention.hpp"
#include "backends/flash3/launch.hpp"
#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"
#include "common/cuda_skip.hpp"
#include "core/philox.hpp"
#include "device_views.hpp"

namespace attnkit::testing {
namespace {

/// The kernel's keep pattern at head dim D (Sq = 300 query rows: 3 tiles, the last partial).
void expect_keep_mask_equals_philox(int64_t d) {
  const int64_t B = 2, Sq = 300, Sk = d, H = 3;
  const double p = 0.3;
  const uint64_t seed = 0xdeadbeefcafeull, offset = (5ull << 32) | 9u;
  const size_t nq = B * Sq * H * d, nk = B * Sk * H * d;
  std::vector<__nv_bfloat16> hq(nq), hk(nk), hv(nk);
  uint32_t x = 7u;
  auto rnd = [&] {
    x = x * 1664525u + 1013904223u;
    return (static_cast<float>(x >> 8) / 16777216.f - 0.5f) * 0.5f;
  };
  for (auto& e : hq)
    e = __float2bfloat16(rnd());
  for (auto& e : hk)
    e = __float2bfloat16(rnd());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < Sk; ++j)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t c = 0; c < d; ++c)
          hv[((b * Sk + j) * H + h) * d + c] = __float2bfloat16(j == c ? 1.f : 0.f);
  DeviceBuffer q(nq * 2), k(nk * 2), v(nk * 2), o(nq * 2);
  ASSERT_EQ(cudaMemcpy(q.p, hq.data(), nq * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(k.p, hk.data(), nk * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(v.p, hv.data(), nk * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(o.p, 0xff, nq * 2), cudaSuccess);  // poisoned: NaN bf16
  auto view = [&](const DeviceBuffer& t, int64_t s) {
    return bshd_view(t.p, DType::bf16, B, s, H, d);
  };
  Options opt;
  opt.backend = "flash3";
  opt.dropout_p = p;
  opt.dropout_seed = seed;
  opt.dropout_offset = offset;
  flash3::set_last_forward_slot(-1);
  ASSERT_EQ(forward({view(q, Sq), view(k, Sk), view(v, Sk), view(o, Sq), {}}, opt), "flash3");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(flash3::last_forward_slot(), flash3::kDropoutSlot);
  std::vector<__nv_bfloat16> got(nq);
  ASSERT_EQ(cudaMemcpy(got.data(), o.p, nq * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  const uint32_t thr = dropout_threshold_for(p);
  int64_t mismatches = 0, kept = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Sq; ++i)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < Sk; ++j) {
          const bool keep = dropout_keep(seed, offset, b, h, H, i, j, thr);
          const float y = __bfloat162float(got[((b * Sq + i) * H + h) * d + j]);
          ASSERT_TRUE(std::isfinite(y)) << "b " << b << " i " << i << " h " << h << " j " << j;
          kept += keep;
          if ((y != 0.f) != keep && ++mismatches <= 5)
            ADD_FAILURE() << "b " << b << " i " << i << " h " << h << " j " << j << ": out " << y
                          << ", Philox says " << (keep ? "keep" : "drop");
        }
  EXPECT_EQ(mismatches, 0);
  // ~70 % kept: the rule is live, not all-keep or all-drop.
  EXPECT_GT(kept, B * H * Sq * Sk * 6 / 10);
  EXPECT_LT(kept, B * H * Sq * Sk * 8 / 10);
}

TEST(Flash3DropoutKeepMask, EqualsPhilox) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "flash3 needs sm_90a";
  for (int64_t d : {64, 128, 256}) {
    if (!flash3_built_with(static_cast<int>(d))) continue;
    SCOPED_TRACE("D " + std::to_string(d));
    expect_keep_mask_equals_philox(d);
  }
}

std::vector<check::Case> dropout_cases(bool backward) {
  std::vector<check::Case> v;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int64_t d : {64, 96, 128, 192, 256}) {
      check::Case c = check::shape_case(dt, 2, 300, 517, 4, 2, d, Causal::none, backward);
      c.dropout_p = 0.1;
      v.push_back(c);
      c = check::shape_case(dt, 1, 517, 300, 4, 1, d, Causal::bottom_right, backward);
      c.dropout_p = 0.5;
      v.push_back(c);
      c = check::shape_case(dt, 2, 257, 257, 2, 2, d, Causal::top_left, backward);
      c.dropout_p = 0.2;
      c.window_left = 64;
      c.softcap = 30.0;
      c.alibi = true;
      v.push_back(c);
      // Masks (the forward's mask build; the backward's kModMaskDropout), with ALiBi once.
      c = check::shape_case(dt, 2, 200, 333, 4, 2, d, Causal::none, backward);
      c.dropout_p = 0.3;
      c.mask = check::MaskCase::keep_bool;
      c.mask_broadcast = 3;
      v.push_back(c);
      c = check::shape_case(dt, 1, 300, 300, 2, 1, d, Causal::top_left, backward);
      c.dropout_p = 0.15;
      c.mask = check::MaskCase::additive;
      c.alibi = true;
      v.push_back(c);
      if (d == 96 || d == 192) continue;  // (varlen at D 96 / 192: declined)
      // Varlen (the counter's b is the sequence, i / j its rows): mixed lengths, an empty
      // sequence, GQA, bottom-right causal.
      c = check::varlen_shape_case(dt, {130, 0, 257, 64}, {200, 17, 257, 1}, 4, 2, d,
                                   Causal::bottom_right, backward);
      c.dropout_p = 0.25;
      v.push_back(c);
    }
  }
  return v;
}

class Flash3Dropout : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3Dropout, MatchesOracle) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  flash3::set_last_forward_slot(-1);
  const check::Report r = check::run_case(GetParam(), "flash3", Device::cuda(0), 29);
  ATTNKIT_EXPECT_CHECK_PASSES(r);
  if (!r.skipped) EXPECT_EQ(flash3::last_forward_slot(), flash3::kDropoutSlot);
}

INSTANTIATE_TEST_SUITE_P(Fwd, Flash3Dropout, ::testing::ValuesIn(dropout_cases(false)),
                         CaseParamName{});
INSTANTIATE_TEST_SUITE_P(Bwd, Flash3Dropout, ::testing::ValuesIn(dropout_cases(true)),
                         CaseParamName{});

/// Varlen at D 96, a mask with softcap in the D <= 128 backward and the deterministic backward
/// with dropout: declined, naming why.
TEST(Flash3DropoutReasons, DeclinedWithReason) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "flash3 needs sm_90a";
  struct Want {
    check::Case c;
    const char* reason;
  };
  std::vector<Want> wants;
  check::Case c = check::shape_case(DType::bf16, 1, 128, 128, 2, 2, 128, Causal::none, true);
  c.dropout_p = 0.1;
  c.mask = check::MaskCase::keep_bool;
  c.softcap = 30.0;
  wants.push_back({c, "dropout with a mask and softcap in the backward"});
  c.mask = check::MaskCase::none;
  c.softcap = 0.0;
  c.deterministic = true;
  wants.push_back({c, "deterministic backward with"});
  c = check::varlen_shape_case(DType::bf16, {100, 60}, {100, 60}, 2, 2, 96, Causal::none, false);
  c.dropout_p = 0.1;
  wants.push_back({c, "dropout with varlen at head_dim 96"});
  for (const Want& w : wants) {
    const check::Report r = check::run_case(w.c, "flash3", Device::cuda(0), 3);
    if (r.detail.find("not in built") != std::string::npos ||
        r.detail.find("not built") != std::string::npos)
      continue;  // (a reduced build without this head dim)
    ASSERT_TRUE(r.skipped) << w.c.name() << ": flash3 ran it";
    EXPECT_NE(r.detail.find(w.reason), std::string::npos) << r.detail;
  }
}

}  // namespace
}  // namespace attnkit::testing
