// flash3's deterministic backward (session 25, bwd_kernel.cuh kDet: dQ summed in key-block order
// through per-tile turn counters): with `deterministic` set, repeated runs on the same inputs give
// bit-identical dq / dk / dv (outputs poisoned before each run), at D 64, 128 and (session 30,
// bwd_kernel_d256.cuh kDet) 256, causal and not,
// with GQA, Sq != Sk and partial blocks; the same calls against the `math` oracle through the
// check harness; and the atomic default stays within rounding of the deterministic dQ.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attnkit/attention.hpp"
#include "attnkit/backend_info.hpp"
#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"
#include "common/cuda_skip.hpp"
#include "common/scoped_env.hpp"
#include "device_views.hpp"

namespace attnkit::testing {
namespace {

bool flash3_runs(int64_t d) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess || p.major != 9 || p.minor != 0) return false;
  for (const auto& b : list_backends())
    if (b.name == "flash3" && b.built)
      for (int x : b.caps.head_dims)
        if (x == d) return true;
  return false;
}

struct Shape {
  int64_t b, sq, sk, hq, hkv, d;
  Causal causal;
  // Non-causal: the turn order without item rotation (ATTNKIT_FLASH3_BWD_DET_ROT=0, the default)
  // or with it (=1, opt-in; the launcher still drops it when a head has more key blocks than the
  // device has SMs).
  bool rot_off = false;
};

class Flash3Determinism : public ::testing::TestWithParam<Shape> {};

TEST_P(Flash3Determinism, BitIdenticalRunToRun) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const Shape c = GetParam();
  if (!flash3_runs(c.d)) GTEST_SKIP() << "flash3 D " << c.d << " not runnable here";
  const DType dt = DType::bf16;
  ScopedEnv rot("ATTNKIT_FLASH3_BWD_DET_ROT", c.rot_off ? "0" : "1");
  const int64_t nq = c.b * c.sq * c.hq * c.d, nk = c.b * c.sk * c.hkv * c.d;
  DeviceBuffer q(nq * 2), k(nk * 2), v(nk * 2), o(nq * 2), dout(nq * 2), dq(nq * 2), dk(nk * 2),
      dv(nk * 2), lse(c.b * c.hq * c.sq * 4);
  std::mt19937 g(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (DeviceBuffer* x : {&q, &k, &v, &dout}) {
    std::vector<uint16_t> h(x->bytes / 2);
    for (auto& e : h) {
      const float f = nd(g);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      e = static_cast<uint16_t>(u >> 16);  // bf16 (truncated)
    }
    ASSERT_EQ(cudaMemcpy(x->p, h.data(), x->bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  TensorView lse_v;
  lse_v.data = lse.p;
  lse_v.dtype = DType::f32;
  lse_v.device = Device::cuda(0);
  lse_v.rank = 3;
  lse_v.shape = {c.b, c.hq, c.sq};
  lse_v.stride = {c.hq * c.sq, c.sq, 1};
  Options o_;
  o_.backend = "flash3";
  o_.causal = c.causal;
  ASSERT_EQ(
      forward({bshd_view(q.p, dt, c.b, c.sq, c.hq, c.d), bshd_view(k.p, dt, c.b, c.sk, c.hkv, c.d),
               bshd_view(v.p, dt, c.b, c.sk, c.hkv, c.d), bshd_view(o.p, dt, c.b, c.sq, c.hq, c.d),
               lse_v},
              o_),
      "flash3");
  std::vector<uint16_t> first[3], atomic_dq;
  for (bool det : {true, false}) {
    o_.deterministic = det;
    for (int rep = 0; rep < 3; ++rep) {
      for (DeviceBuffer* x : {&dq, &dk, &dv})  // poison: every element must be written
        ASSERT_EQ(cudaMemset(x->p, 0xff, x->bytes), cudaSuccess);
      ASSERT_EQ(
          backward(
              {bshd_view(dout.p, dt, c.b, c.sq, c.hq, c.d),
               bshd_view(q.p, dt, c.b, c.sq, c.hq, c.d), bshd_view(k.p, dt, c.b, c.sk, c.hkv, c.d),
               bshd_view(v.p, dt, c.b, c.sk, c.hkv, c.d), bshd_view(o.p, dt, c.b, c.sq, c.hq, c.d),
               lse_v, bshd_view(dq.p, dt, c.b, c.sq, c.hq, c.d),
               bshd_view(dk.p, dt, c.b, c.sk, c.hkv, c.d),
               bshd_view(dv.p, dt, c.b, c.sk, c.hkv, c.d)},
              o_),
          "flash3");
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      DeviceBuffer* outs[3] = {&dq, &dk, &dv};
      for (int i = 0; i < 3; ++i) {
        std::vector<uint16_t> got(outs[i]->bytes / 2);
        ASSERT_EQ(cudaMemcpy(got.data(), outs[i]->p, outs[i]->bytes, cudaMemcpyDeviceToHost),
                  cudaSuccess);
        if (!det) {
          if (i == 0 && rep == 0) atomic_dq = got;
          continue;
        }
        if (rep == 0)
          first[i] = got;
        else
          EXPECT_EQ(0, std::memcmp(got.data(), first[i].data(), got.size() * 2))
              << "gradient " << i << " differs between deterministic runs (rep " << rep << ")";
      }
    }
  }
  // The atomic default: same sums in another order, within rounding of the deterministic dQ.
  double num = 0, den = 0;
  for (size_t i = 0; i < atomic_dq.size(); ++i) {
    uint32_t a = static_cast<uint32_t>(atomic_dq[i]) << 16, b = static_cast<uint32_t>(first[0][i])
                                                                << 16;
    float fa, fb;
    std::memcpy(&fa, &a, 4);
    std::memcpy(&fb, &b, 4);
    ASSERT_TRUE(std::isfinite(fa) && std::isfinite(fb)) << "dq element " << i;
    num += (fa - fb) * (fa - fb);
    den += fb * fb;
  }
  EXPECT_LE(std::sqrt(num / (den + 1e-30)), 1e-2) << "atomic dq vs deterministic dq";
}

INSTANTIATE_TEST_SUITE_P(Shapes, Flash3Determinism,
                         ::testing::Values(Shape{2, 300, 517, 8, 2, 64, Causal::none},
                                           Shape{2, 300, 517, 8, 2, 64, Causal::none, true},
                                           // 4 items (query blocks x group) for 5 key blocks:
                                           // rotated starts coincide.
                                           Shape{2, 60, 517, 8, 2, 128, Causal::none},
                                           // 133 key blocks: more than an H100 / H200 has SMs,
                                           // so no rotation.
                                           Shape{1, 130, 16897, 2, 1, 64, Causal::none},
                                           Shape{2, 517, 300, 4, 1, 64, Causal::bottom_right},
                                           Shape{1, 1000, 1000, 4, 4, 64, Causal::top_left},
                                           Shape{2, 300, 517, 8, 2, 128, Causal::none},
                                           Shape{2, 517, 300, 4, 1, 128, Causal::bottom_right},
                                           Shape{1, 1000, 1000, 4, 4, 128, Causal::top_left},
                                           // D 256 (session 30, bwd_kernel_d256.cuh kDet): 64-key
                                           // CTAs, so 9 / 264 key blocks; both causal alignments.
                                           Shape{2, 300, 517, 4, 2, 256, Causal::none},
                                           Shape{1, 130, 16833, 2, 1, 256, Causal::none},
                                           Shape{2, 517, 300, 4, 1, 256, Causal::bottom_right},
                                           Shape{1, 1000, 1000, 4, 4, 256, Causal::top_left}),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           const Shape& s = i.param;
                           return "b" + std::to_string(s.b) + "_sq" + std::to_string(s.sq) + "_sk" +
                                  std::to_string(s.sk) + "_h" + std::to_string(s.hq) + "x" +
                                  std::to_string(s.hkv) + "_d" + std::to_string(s.d) + "_" +
                                  (s.causal == Causal::none       ? "nc"
                                   : s.causal == Causal::top_left ? "tl"
                                                                  : "br") +
                                  (s.rot_off ? "_norot" : "");
                         });

/// The deterministic backward against the `math` oracle (the check harness: poisoned outputs,
/// hostile-ish shapes).
class Flash3DeterminismOracle : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3DeterminismOracle, MatchesOracle) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  ATTNKIT_EXPECT_CHECK_PASSES(check::run_case(GetParam(), "flash3", Device::cuda(0), 23));
}

std::vector<check::Case> det_cases() {
  std::vector<check::Case> v;
  for (DType dt : {DType::bf16, DType::f16})
    for (int64_t d : {64, 128, 256})
      for (Causal cz : {Causal::none, Causal::bottom_right}) {
        check::Case c = check::shape_case(dt, 2, 200, 333, 4, 2, d, cz, /*backward=*/true);
        c.deterministic = true;
        v.push_back(c);
      }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Bwd, Flash3DeterminismOracle, ::testing::ValuesIn(det_cases()),
                         CaseParamName{});

}  // namespace
}  // namespace attnkit::testing
