// Element types of flash3's masks (FwdArgs / BwdArgs mask_kind: 1 bool, 2 f32, 3 f16, 4 bf16) and
// their value as a float, shared by the forward's apply_mask_kind (score_mod.cuh) and the
// backward's mask kind (bwd_kernel.cuh kModMask).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace attnkit::flash3 {

/// Element type of mask kind k (FwdArgs::mask_kind: 1 bool, 2 f32, 3 f16, 4 bf16).
template <int kKind>
using MaskElem = std::conditional_t<
    kKind == 1, uint8_t,
    std::conditional_t<kKind == 2, float, std::conditional_t<kKind == 3, __half, __nv_bfloat16>>>;

template <int kKind>
__device__ __forceinline__ float mask_value(MaskElem<kKind> v) {
  if constexpr (kKind == 1) {
    return static_cast<float>(v);
  } else if constexpr (kKind == 2) {
    return v;
  } else if constexpr (kKind == 3) {
    return __half2float(v);
  } else {
    return __bfloat162float(v);
  }
}

}  // namespace attnkit::flash3
