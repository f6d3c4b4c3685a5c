// Dropout mask equality: with V = identity (Sk = D) the output row i is P[i, :] * keep / (1 - p),
// so out[i, j] == 0 exactly where the flash kernel dropped (i, j). That pattern must equal
// philox.hpp's dropout_keep() bit for bit, for every (b, h, i, j).
#include <gtest/gtest.h>

#include "common/cuda_skip.hpp"
#include "core/philox.hpp"
#include "flash_test_util.cuh"

namespace attnkit::flash_test {
namespace {

TEST(FlashDropout, KeepMaskEqualsPhilox) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const int64_t B = 2, S = 64, H = 3, D = 64;  // Sk == D: V is the identity per head
  if (flash::kBuiltHeadDims[sizeof(flash::kBuiltHeadDims) / sizeof(int) - 1] < D)
    GTEST_SKIP() << "no built head dim >= 64";
  const DType dt = DType::bf16;
  std::mt19937_64 g(5);
  std::normal_distribution<float> nd(0.f, 0.5f);
  Tensor q, k, v, out;
  for (Tensor* t : {&q, &k, &v, &out}) {
    t->rank = 4;
    t->shape = {B, S, H, D};
    t->host.resize(t->numel());
  }
  for (auto& x : q.host)
    x = round_to(dt, nd(g));
  for (auto& x : k.host)
    x = round_to(dt, nd(g));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < S; ++j)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          v.host[((b * S + j) * H + h) * D + d] = j == d ? 1.f : 0.f;
  for (Tensor* t : {&q, &k, &v, &out})
    upload(*t, dt, false, false);
  Options o;
  o.backend = "flash";
  o.dropout_p = 0.3;
  o.dropout_seed = 0xdeadbeefcafeull;
  o.dropout_offset = (5ull << 32) | 9u;
  ASSERT_EQ(forward({q.dev_view(dt), k.dev_view(dt), v.dev_view(dt), out.dev_view(dt), {}}, o),
            "flash");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = download(out, dt);
  const uint32_t thr = dropout_threshold_for(0.3);
  int64_t mismatches = 0, kept = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < S; ++j) {
          const bool keep = dropout_keep(o.dropout_seed, o.dropout_offset, b, h, H, i, j, thr);
          const float x = got[((b * S + i) * H + h) * D + j];
          ASSERT_TRUE(std::isfinite(x));
          kept += keep;
          if ((x != 0.f) != keep) ++mismatches;
        }
  EXPECT_EQ(mismatches, 0);
  // ~70 % kept: the rule is live, not all-keep or all-drop.
  EXPECT_GT(kept, B * H * S * S * 6 / 10);
  EXPECT_LT(kept, B * H * S * S * 8 / 10);
}

}  // namespace
}  // namespace attnkit::flash_test
