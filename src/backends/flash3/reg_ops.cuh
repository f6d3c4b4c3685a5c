// Register-level helpers shared by the flash3 forward and backward kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// Two fp32 values rounded to one packed 16-bit pair (bf16 or f16), low half = a.
template <bool BF16>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  if constexpr (BF16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

/// Ties registers written asynchronously by wgmma to this point in program order, so the
/// compiler cannot hoist their reads above a wgmma_wait (or sink writes below an issue).
template <int N>
__device__ __forceinline__ void fence_regs(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    attnkit::cuda::sm90::reg_fence(x[i]);
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    attnkit::cuda::sm90::reg_fence(x[i]);
}

}  // namespace attnkit::flash3
