// Unit tests of src/cuda/ptx_sm80.hpp on the device: cp.async (incl. zero-fill), ldmatrix (plain
// and transposed) and one mma.m16n8k16, each against a host computation.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/cuda_skip.hpp"
#include "cuda/ptx_sm80.hpp"

namespace attnkit::ptx_test {
namespace {

using attnkit::ptx::cp_async_16;

// A (16x16 row-major) and B (stored either [n][k] 8x16 or [k][n] 16x8) -> C (16x8 fp32).
// Loads go global -> shared by cp.async; chunk 1 of row 15 of A is zero-filled (valid = false).
template <typename T, bool kBTrans>
__global__ void mma_kernel(const T* a, const T* b, float* c) {
  __shared__ __align__(128) T sa[16 * 16];
  __shared__ __align__(128) T sb[16 * 8];
  const int lane = threadIdx.x;
  // A: 32 chunks of 8 elements, one per lane.
  {
    const int r = lane / 2, ch = lane % 2;
    const bool valid = !(r == 15 && ch == 1);
    cp_async_16(ptx::smem_addr(sa + r * 16 + ch * 8), a + r * 16 + ch * 8, valid);
  }
  if (lane < 16) cp_async_16(ptx::smem_addr(sb + lane * 8), b + lane * 8, true);
  ptx::cp_async_commit();
  ptx::cp_async_wait<0>();
  __syncwarp();
  uint32_t af[4];
  ptx::ldmatrix_x4(af, ptx::smem_addr(sa + (lane % 16) * 16 + (lane / 16) * 8));
  uint32_t bf[2];
  if constexpr (kBTrans) {
    // B stored [k][n] (16 rows of 8): matrices k 0-7 and k 8-15, transposed on load.
    ptx::ldmatrix_x2_trans(bf, ptx::smem_addr(sb + (lane % 16) * 8));
  } else {
    // B stored [n][k] (8 rows of 16): matrices k 0-7 and k 8-15 of the 8 n rows.
    ptx::ldmatrix_x2(bf, ptx::smem_addr(sb + (lane % 8) * 16 + ((lane / 8) % 2) * 8));
  }
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  ptx::mma_m16n8k16<T>(acc, af, bf);
  const int g = lane / 4, t = lane % 4;
  c[g * 8 + 2 * t] = acc[0];
  c[g * 8 + 2 * t + 1] = acc[1];
  c[(g + 8) * 8 + 2 * t] = acc[2];
  c[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

template <typename T, bool kBTrans>
void check_mma() {
  ATTNKIT_SKIP_IF_NO_CUDA();
  std::vector<T> a(256), b(128);
  std::vector<float> af(256), bf(128);
  for (int i = 0; i < 256; ++i) {
    af[i] = static_cast<float>((i * 7) % 13 - 6) / 4.f;  // exact in f16 and bf16
    a[i] = T(af[i]);
  }
  for (int i = 0; i < 128; ++i) {
    bf[i] = static_cast<float>((i * 5) % 11 - 5) / 2.f;
    b[i] = T(bf[i]);
  }
  for (int c = 8; c < 16; ++c)
    af[15 * 16 + c] = 0.f;  // the zero-filled chunk
  T *da, *db;
  float* dc;
  ASSERT_EQ(cudaMalloc(&da, 512), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, 256), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dc, 512), cudaSuccess);
  cudaMemcpy(da, a.data(), 512, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), 256, cudaMemcpyHostToDevice);
  cudaMemset(dc, 0xff, 512);
  mma_kernel<T, kBTrans><<<1, 32>>>(da, db, dc);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> c(128);
  cudaMemcpy(c.data(), dc, 512, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float ref = 0.f;
      for (int k = 0; k < 16; ++k) {
        const float bkn = kBTrans ? bf[k * 8 + n] : bf[n * 16 + k];
        ref += af[m * 16 + k] * bkn;
      }
      EXPECT_EQ(c[m * 8 + n], ref) << "m " << m << " n " << n;  // exact: small integers / 8
    }
}

TEST(PtxSm80, MmaF16LdmatrixCpAsync) {
  check_mma<__half, false>();
}
TEST(PtxSm80, MmaBf16LdmatrixCpAsync) {
  check_mma<__nv_bfloat16, false>();
}
TEST(PtxSm80, MmaF16LdmatrixTrans) {
  check_mma<__half, true>();
}
TEST(PtxSm80, MmaBf16LdmatrixTrans) {
  check_mma<__nv_bfloat16, true>();
}

}  // namespace
}  // namespace attnkit::ptx_test
