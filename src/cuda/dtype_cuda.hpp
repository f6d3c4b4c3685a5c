// Device-side element conversions for the float dtypes kernels read and write (f32, f16, bf16),
// round-to-nearest-even like the host's dtype_convert.hpp (the tests check both agree).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "attnkit/tensor.hpp"

namespace attnkit::cuda {

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

/// Element `idx` of a float tensor whose dtype is only known at run time (masks): f32/f16/bf16.
__device__ __forceinline__ float load_float_dyn(const void* base, int64_t idx, DType t) {
  switch (t) {
    case DType::f16:
      return __half2float(static_cast<const __half*>(base)[idx]);
    case DType::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[idx]);
    default:
      return static_cast<const float*>(base)[idx];
  }
}

/// The CUDA element type of a float DType, for dispatch: `dispatch_float_dtype(t, [&](auto tag)
/// { using T = typename decltype(tag)::type; ... })`.
template <typename T>
struct TypeTag {
  using type = T;
};

}  // namespace attnkit::cuda
