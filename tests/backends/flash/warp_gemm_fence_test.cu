// warp_gemm_ss_wo's kFence (ATTNKIT_FLASH_BWD_DQ_FENCE_128) on the device: the fused backward's
// D = 128 dQ warp GEMM shape (2 x 4 m16n8 tiles, K = 128, A stored [m][k], B stored [k][n]) with
// the ldmatrix fence at slice 2 / 6 gives bit for bit the result without it and the exact host
// product (small integers), in bf16 and f16. Skips without a CUDA device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <vector>

#include "backends/flash/smem_layout.hpp"
#include "backends/flash/warp_mma.cuh"
#include "common/cuda_skip.hpp"

namespace attnkit::flash_test {
namespace {

constexpr int kM = 32, kN = 32, kK = 128;  // warp tile (MT = 2, NT = 4), k extent
constexpr int kN0 = 32;                    // the warp's column origin in B's 64-wide panel
using LA = flash::SmemLayout<kM, kK>;      // A (32, 128): two 64-wide panels
using LB = flash::SmemLayout<kK, 64>;      // B (128, 64): one panel

// a: (kM, kK) row-major, b: (kK, 64) row-major -> c: (kM, kN) row-major, one warp.
template <typename T, int kFence>
__global__ void gemm_kernel(const T* a, const T* b, float* c) {
  __shared__ __align__(128) T sa[LA::kSize];
  __shared__ __align__(128) T sb[LB::kSize];
  for (int i = threadIdx.x; i < kM * kK; i += 32)
    sa[LA::off(i / kK, i % kK)] = a[i];
  for (int i = threadIdx.x; i < kK * 64; i += 32)
    sb[LB::off(i / 64, i % 64)] = b[i];
  __syncwarp();
  float acc[2][4][4] = {};
  flash::warp_gemm_ss_wo<true, 2, 4, kK, false, true, LA, LB, 64, kFence>(acc, sa, sb, 0, kN0);
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  for (int mt = 0; mt < 2; ++mt)
    for (int nt = 0; nt < 4; ++nt)
      for (int r = 0; r < 4; ++r)
        c[(mt * 16 + g + (r / 2) * 8) * kN + nt * 8 + 2 * t + r % 2] = acc[mt][nt][r];
}

template <typename T, int kFence>
std::vector<float> run(const std::vector<T>& a, const std::vector<T>& b) {
  T *da, *db;
  float* dc;
  EXPECT_EQ(cudaMalloc(&da, a.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&db, b.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dc, kM * kN * sizeof(float)), cudaSuccess);
  cudaMemcpy(da, a.data(), a.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemset(dc, 0xff, kM * kN * sizeof(float));
  gemm_kernel<T, kFence><<<1, 32>>>(da, db, dc);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> c(kM * kN);
  cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return c;
}

template <typename T>
void check() {
  ATTNKIT_SKIP_IF_NO_CUDA();
  std::vector<float> af(kM * kK), bf(kK * 64);
  std::vector<T> a(af.size()), b(bf.size());
  for (size_t i = 0; i < af.size(); ++i) {
    af[i] = static_cast<float>(static_cast<int>((i * 7) % 9) - 4);  // -4..4
    a[i] = T(af[i]);
  }
  for (size_t i = 0; i < bf.size(); ++i) {
    bf[i] = static_cast<float>(static_cast<int>((i * 5) % 7) - 3);  // -3..3
    b[i] = T(bf[i]);
  }
  const std::vector<float> c0 = run<T, 0>(a, b), c2 = run<T, 2>(a, b), c6 = run<T, 6>(a, b);
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      float ref = 0.f;  // |sum| <= 128 * 12: exact in fp32
      for (int k = 0; k < kK; ++k)
        ref += af[m * kK + k] * bf[k * 64 + kN0 + n];
      const int i = m * kN + n;
      EXPECT_EQ(c0[i], ref) << "m " << m << " n " << n;
      EXPECT_EQ(c2[i], c0[i]) << "fence 2, m " << m << " n " << n;
      EXPECT_EQ(c6[i], c0[i]) << "fence 6, m " << m << " n " << n;
    }
}

TEST(WarpGemmFence, Bf16) {
  check<__nv_bfloat16>();
}
TEST(WarpGemmFence, F16) {
  check<__half>();
}

}  // namespace
}  // namespace attnkit::flash_test
