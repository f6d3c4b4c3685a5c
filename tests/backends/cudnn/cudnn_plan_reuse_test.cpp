// cudnn plan cache on the GPU, through the public API: a configuration's plan is built once and
// reused by later calls (other pointers, other scale) and by other threads on other streams;
// results of concurrent calls equal a single-threaded call bit for bit.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "attnkit/attention.hpp"
#include "backends/cudnn/plan_cache.hpp"
#include "common/cuda_skip.hpp"

namespace attnkit {
namespace {

/// Device buffer of n bf16 values drawn from N(0, 1) (bf16 = the high half of an fp32).
struct DevBf16 {
  void* p = nullptr;
  int64_t n = 0;
  explicit DevBf16(int64_t count, uint64_t seed = 0) : n(count) {
    EXPECT_EQ(cudaMalloc(&p, n * 2), cudaSuccess);
    std::mt19937_64 g(seed);
    std::normal_distribution<float> nd;
    std::vector<uint16_t> h(n);
    for (auto& x : h) {
      const float f = nd(g);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      x = static_cast<uint16_t>(u >> 16);
    }
    EXPECT_EQ(cudaMemcpy(p, h.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DevBf16() { cudaFree(p); }
  std::vector<uint16_t> host() const {
    std::vector<uint16_t> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

struct Problem {
  int64_t b, s, h, d;
  DevBf16 q, k, v, out;
  Problem(int64_t b_, int64_t s_, int64_t h_, int64_t d_, uint64_t seed)
      : b(b_),
        s(s_),
        h(h_),
        d(d_),
        q(b * s * h * d, seed),
        k(b * s * h * d, seed + 1),
        v(b * s * h * d, seed + 2),
        out(b * s * h * d, seed + 3) {}
  TensorView view(const DevBf16& t) const {
    return TensorView::contiguous(t.p, DType::bf16, {b, s, h, d}, Device::cuda(0));
  }
  void forward(void* stream, double scale = 0.125) {
    Options o;
    o.backend = "_native_cudnn";  // alias
    o.causal = Causal::top_left;
    o.scale = scale;
    o.stream = stream;
    EXPECT_EQ(attnkit::forward({view(q), view(k), view(v), view(out), {}}, o), "cudnn");
  }
};

TEST(CudnnPlanReuse, BuiltOnceReusedAcrossCalls) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  cudnn::plan_cache_reset();
  Problem a(2, 192, 4, 64, 1), b(2, 192, 4, 64, 11);
  a.forward(nullptr);
  EXPECT_EQ(cudnn::plan_cache_stats().builds, 1u);
  a.forward(nullptr);
  b.forward(nullptr, 0.3);  // other pointers and scale: same plan
  EXPECT_EQ(cudnn::plan_cache_stats().builds, 1u);
  EXPECT_GE(cudnn::plan_cache_stats().hits, 2u);
  Problem c(2, 200, 4, 64, 21);  // other shape: a second plan
  c.forward(nullptr);
  EXPECT_EQ(cudnn::plan_cache_stats().builds, 2u);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudnnPlanReuse, SharedAcrossThreadsWithIdenticalResults) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  cudnn::plan_cache_reset();
  Problem ref(1, 256, 8, 128, 5);
  ref.forward(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint16_t> expect = ref.out.host();
  EXPECT_EQ(cudnn::plan_cache_stats().builds, 1u);

  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<Problem>> probs;
  for (int t = 0; t < kThreads; ++t)
    probs.push_back(std::make_unique<Problem>(1, 256, 8, 128, 5));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      cudaStream_t s;
      EXPECT_EQ(cudaStreamCreate(&s), cudaSuccess);
      for (int i = 0; i < 10; ++i)
        probs[t]->forward(s);
      EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    });
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(cudnn::plan_cache_stats().builds, 1u);
  EXPECT_GE(cudnn::plan_cache_stats().hits, uint64_t(kThreads * 10));
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(probs[t]->out.host(), expect) << "thread " << t;
}

}  // namespace
}  // namespace attnkit
