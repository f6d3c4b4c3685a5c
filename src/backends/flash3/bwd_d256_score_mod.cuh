// The D 256 backward's score mods, one element at a time (both consumer layouts: the split
// kernel's kMod, bwd_kernel_d256.cuh, and the RS layout's, bwd_d256_rs.cuh): softcap, ALiBi, a
// sliding window and a bool / additive mask, each where set (BwdArgs as bwd_kernel.cuh's kMod
// kinds take them).
#pragma once

#include <cmath>
#include <cstdint>

#include "backends/flash3/bwd_args.hpp"
#include "backends/flash3/mask_elem.cuh"
#include "cuda/sfu_math.cuh"

namespace attnkit::flash3::bwd {

/// The mask's value at element offset off of a (b, h) mask base: kKind 1 (bool) 0 or -inf, else
/// the stored value times mul.
template <int kKind>
__device__ __forceinline__ float mask_add(const uint8_t* m, int64_t off, float mul) {
  const MaskElem<kKind> v = reinterpret_cast<const MaskElem<kKind>*>(m)[off];
  if constexpr (kKind == 1)
    return v != 0 ? 0.f : -INFINITY;
  else
    return mask_value<kKind>(v) * mul;
}

/// Per item (batch b, q head h): ALiBi's slope times alibi_mul (0: none), the mask's (b, h) base
/// (null: none) and the window's lower offset (a key is masked when key < q + lo; -2^30: none).
struct ModItem {
  float alibi_k;
  const uint8_t* mbh;
  int lo;
};
__device__ __forceinline__ ModItem mod_item(const BwdArgs& a, int b, int h) {
  ModItem m{0.f, nullptr, a.window_lo ? a.lo_offset : -(1 << 30)};
  if (a.alibi != nullptr) m.alibi_k = a.alibi[b * a.alibi_sb + h * a.alibi_sh] * a.alibi_mul;
  if (a.mask_kind != 0) {
    const int64_t bytes = a.mask_kind == 1 ? 1 : a.mask_kind == 2 ? 4 : 2;
    m.mbh = a.mask + (static_cast<int64_t>(b) * a.mask_sb + h * a.mask_sh) * bytes;
  }
  return m;
}

/// Score xs (raw S, before the softmax scale) of query q and key key, modified in score_mod.cuh's
/// order: softcap's t = tanh(xs softcap_k) first (f = 1 - t^2, the factor dS takes; else f is
/// left as is), then ALiBi, then the mask's value. Indices are clamped into the mask: rows >= Sq
/// and keys >= Sk are zeroed by the caller.
__device__ __forceinline__ float score_mod_elem(const BwdArgs& a, const ModItem& m, float xs, int q,
                                                int key, float& f) {
  if (a.softcap_k != 0.f) {
    const float t = attnkit::cuda::tanh_exp2(xs * a.softcap_k);
    xs = t;
    f = fmaf(-t, t, 1.f);
  }
  if (m.alibi_k != 0.f) xs = fmaf(m.alibi_k, static_cast<float>(abs(q + a.diag_offset - key)), xs);
  if (m.mbh != nullptr) {
    const int64_t off = static_cast<int64_t>(min(q, a.seqlen_q - 1)) * a.mask_si +
                        static_cast<int64_t>(min(key, a.seqlen_k - 1)) * a.mask_sj;
    switch (a.mask_kind) {
      case 1:
        xs += mask_add<1>(m.mbh, off, a.mask_mul);
        break;
      case 2:
        xs += mask_add<2>(m.mbh, off, a.mask_mul);
        break;
      case 3:
        xs += mask_add<3>(m.mbh, off, a.mask_mul);
        break;
      default:
        xs += mask_add<4>(m.mbh, off, a.mask_mul);
        break;
    }
  }
  return xs;
}

}  // namespace attnkit::flash3::bwd
