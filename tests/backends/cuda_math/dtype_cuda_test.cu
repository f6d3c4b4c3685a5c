// Device conversions (src/cuda/dtype_cuda.hpp) agree bit for bit with the host's
// (src/core/dtype_convert.hpp) on rounding ties, subnormals, overflow, Inf and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/cuda_skip.hpp"
#include "core/dtype_convert.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/dtype_cuda.hpp"

namespace attnkit {
namespace {

__global__ void convert_kernel(const float* in, uint16_t* h, uint16_t* bf, float* h_back,
                               float* bf_back, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const __half hv = cuda::from_float<__half>(in[i]);
  const __nv_bfloat16 bv = cuda::from_float<__nv_bfloat16>(in[i]);
  h[i] = __half_as_ushort(hv);
  bf[i] = __bfloat16_as_ushort(bv);
  h_back[i] = cuda::to_float(hv);
  bf_back[i] = cuda::to_float(bv);
}

TEST(CudaDtype, DeviceConversionsMatchHost) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  std::vector<float> x = {0.f,
                          -0.f,
                          1.f,
                          -1.5f,
                          65504.f,
                          65520.f,
                          1e6f,
                          6e-8f,
                          3e-8f,
                          1e-40f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          1.00048828125f /* f16 tie */,
                          1.00390625f /* bf16 tie */,
                          3.14159265f,
                          -2.71828f};
  for (int i = 0; i < 2000; ++i)
    x.push_back(std::ldexp(static_cast<float>(i) * 0.7371f - 700.f, (i % 60) - 30));
  const int n = static_cast<int>(x.size());
  float *din, *dhb, *dbb;
  uint16_t *dh, *db;
  ATTNKIT_CUDA_CHECK(cudaMalloc(&din, n * 4));
  ATTNKIT_CUDA_CHECK(cudaMalloc(&dhb, n * 4));
  ATTNKIT_CUDA_CHECK(cudaMalloc(&dbb, n * 4));
  ATTNKIT_CUDA_CHECK(cudaMalloc(&dh, n * 2));
  ATTNKIT_CUDA_CHECK(cudaMalloc(&db, n * 2));
  ATTNKIT_CUDA_CHECK(cudaMemcpy(din, x.data(), n * 4, cudaMemcpyHostToDevice));
  convert_kernel<<<(n + 255) / 256, 256>>>(din, dh, db, dhb, dbb, n);
  ATTNKIT_CUDA_CHECK_LAUNCH();
  std::vector<uint16_t> h(n), b(n);
  std::vector<float> hb(n), bb(n);
  ATTNKIT_CUDA_CHECK(cudaMemcpy(h.data(), dh, n * 2, cudaMemcpyDeviceToHost));
  ATTNKIT_CUDA_CHECK(cudaMemcpy(b.data(), db, n * 2, cudaMemcpyDeviceToHost));
  ATTNKIT_CUDA_CHECK(cudaMemcpy(hb.data(), dhb, n * 4, cudaMemcpyDeviceToHost));
  ATTNKIT_CUDA_CHECK(cudaMemcpy(bb.data(), dbb, n * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(h[i], f32_to_f16(x[i])) << "f16 of " << x[i];
    EXPECT_EQ(b[i], f32_to_bf16(x[i])) << "bf16 of " << x[i];
    EXPECT_EQ(hb[i], f16_to_f32(h[i]));
    EXPECT_EQ(bb[i], bf16_to_f32(b[i]));
  }
  cudaFree(din), cudaFree(dhb), cudaFree(dbb), cudaFree(dh), cudaFree(db);
}

}  // namespace
}  // namespace attnkit
