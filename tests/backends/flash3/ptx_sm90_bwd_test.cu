// The PTX wrappers the flash3 backward added to src/cuda/ptx_sm90.hpp ("backward additions"):
// bulk_load_g2s (global -> shared bulk copy completing on an mbarrier) and bulk_reduce_add_f32
// (shared -> global fp32 reduce-add at L2) with bulk_commit / bulk_wait_read / bulk_wait.
// Several CTAs reduce into the same destination, so the reduction must be atomic per element.
// Values are small integers: every sum is exact in fp32, so the check is bit-exact.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/cuda_skip.hpp"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::testing {
namespace {

constexpr int kN = 1024;  // floats per CTA copy (4 KB)

__global__ void bulk_roundtrip_kernel(const float* src, float* dst) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace ptx = attnkit::cuda::sm90;
  __shared__ alignas(128) float buf[kN];
  __shared__ alignas(8) uint64_t bar;
  if (threadIdx.x == 0) {
    ptx::mbar_init(&bar, 1);
    ptx::fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::mbar_arrive_expect_tx(&bar, kN * 4);
    ptx::bulk_load_g2s(buf, src, kN * 4, &bar);
  }
  ptx::mbar_wait(&bar, 0);
  for (int i = threadIdx.x; i < kN; i += blockDim.x)
    buf[i] = buf[i] * 2.f + static_cast<float>(blockIdx.x);  // generic-proxy writes
  ptx::fence_proxy_async_smem();
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::bulk_reduce_add_f32(dst, buf, kN * 4);
    ptx::bulk_commit();
    ptx::bulk_wait_read<0>();
    ptx::bulk_wait<0>();
  }
#endif
}

TEST(Sm90BwdPtx, BulkLoadAndReduceAdd) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major < 9) GTEST_SKIP() << "needs sm90 (device is sm" << prop.major << prop.minor << ")";
  std::vector<float> h_src(kN), h_dst(kN);
  for (int i = 0; i < kN; ++i) {
    h_src[i] = static_cast<float>(i % 97 - 48);
    h_dst[i] = static_cast<float>(i % 13);
  }
  float *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, kN * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, kN * 4), cudaSuccess);
  cudaMemcpy(src, h_src.data(), kN * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dst, h_dst.data(), kN * 4, cudaMemcpyHostToDevice);
  constexpr int kCtas = 5;
  bulk_roundtrip_kernel<<<kCtas, 128>>>(src, dst);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> out(kN);
  cudaMemcpy(out.data(), dst, kN * 4, cudaMemcpyDeviceToHost);
  cudaFree(src);
  cudaFree(dst);
  int bad = 0;
  for (int i = 0; i < kN; ++i) {
    // dst + sum over CTAs c of (2 src + c) = dst + 5 * 2 src + (0 + 1 + 2 + 3 + 4)
    const float want = h_dst[i] + kCtas * 2.f * h_src[i] + 10.f;
    if (out[i] != want && bad++ < 5)
      ADD_FAILURE() << "i = " << i << ": " << out[i] << " != " << want;
  }
  EXPECT_EQ(bad, 0);
}

// ld_acquire_gpu / st_release_gpu (session 25, the deterministic backward's turn counters): CTA i
// waits for the flag to read i, appends its index to a log through plain accesses that only the
// acquire / release pair orders, and hands the flag to i + 1; the log must read 0, 1, 2, ...
// (kTurnCtas CTAs of one thread all fit on the device at once, so no CTA waits for one that is
// not resident).
constexpr int kTurnCtas = 64;

__global__ void turn_chain_kernel(int* flag, int* log, int* count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace ptx = attnkit::cuda::sm90;
  const int me = static_cast<int>(blockIdx.x);
  while (ptx::ld_acquire_gpu(flag) != me) {
  }
  const int c = *count;
  log[c] = me;
  *count = c + 1;
  ptx::st_release_gpu(flag, me + 1);
#endif
}

TEST(Sm90BwdPtx, AcquireReleaseTurns) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major < 9) GTEST_SKIP() << "needs sm90 (device is sm" << prop.major << prop.minor << ")";
  int* buf = nullptr;  // flag, count, log[kTurnCtas]
  ASSERT_EQ(cudaMalloc(&buf, (2 + kTurnCtas) * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(buf, 0, 2 * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(buf + 2, 0xff, kTurnCtas * 4), cudaSuccess);
  turn_chain_kernel<<<kTurnCtas, 1>>>(buf, buf + 2, buf + 1);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<int> h(2 + kTurnCtas);
  cudaMemcpy(h.data(), buf, h.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(buf);
  EXPECT_EQ(h[0], kTurnCtas);  // the flag after the last turn
  EXPECT_EQ(h[1], kTurnCtas);  // appends
  for (int i = 0; i < kTurnCtas; ++i)
    EXPECT_EQ(h[2 + i], i) << "log position " << i;
}

}  // namespace
}  // namespace attnkit::testing
