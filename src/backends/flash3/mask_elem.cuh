// Element types of flash3's masks (FwdArgs / BwdArgs mask_kind: 1 bool, 2 f32, 3 f16, 4 bf16) and
// their value as a float, shared by the forward's apply_mask_kind (score_mod.cuh) and the
// backward's mask kind (bwd_kernel.cuh kModMask).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
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

/// Score x with mask element v applied: a bool mask's false hides it (-inf), an additive mask's
/// value joins it times mul (the kernels' score units). The forward (score_mod.cuh
/// apply_mask_kind) and the D 64 / 128 backward (bwd_kernel.cuh kModMask) both apply it.
template <int kKind>
__device__ __forceinline__ float masked_score(float x, MaskElem<kKind> v, float mul) {
  if constexpr (kKind == 1)
    return v != 0 ? x : -INFINITY;
  else
    return fmaf(mask_value<kKind>(v), mul, x);
}

/// f(std::integral_constant<int, kind>{}) for a mask kind 1..4 known only at run time (1, 2, 3;
/// anything else as 4): the backward's kernels switch once per item (kModMask) or element (D 256).
template <class F>
__device__ __forceinline__ void with_mask_kind(int kind, F&& f) {
  switch (kind) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 3:
      f(std::integral_constant<int, 3>{});
      break;
    default:
      f(std::integral_constant<int, 4>{});
      break;
  }
}

}  // namespace attnkit::flash3
