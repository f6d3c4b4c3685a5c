// The causal and sliding-window bounds of one sequence, as the flash3 forward encodes them
// (fwd_args.hpp: causal / causal_offset, window_lo / lo_offset, diag_offset). One function for
// the host (launch.cuh set_score_mod: a dense call's single (Sq, Sk)) and the device (kVarVarlen:
// every tile's own sequence lengths), so both apply the same rule. Also, host only, the score
// modification of a call as both passes encode it (score_mod_of: launch.cuh set_score_mod,
// bwd_launch.cuh set_bwd_score_mod).
#pragma once

#include <cuda_runtime.h>  // __host__ __device__

#include <cmath>
#include <cstdint>

#include "core/params.hpp"

namespace attnkit::flash3 {

struct SeqBounds {
  int causal;         // 1: key j visible only if j <= i + causal_offset
  int causal_offset;  // the causal alignment's offset, or the window's right edge if smaller
  int window_lo;      // 1: key j hidden when j < i + lo_offset (the window's left edge)
  int lo_offset;
  int diag_offset;  // Sk - Sq (ALiBi's distance |i + Sk - Sq - j|)
};

/// Bounds of a sequence of sq queries and sk keys. causal_kind: 0 none, 1 top-left, 2
/// bottom-right; wl / wr: the window's left / right edge (-1 = unbounded). The right edge joins
/// the causal bound (the smaller offset wins); an edge that cannot hide a key (wr >= sq,
/// wl >= sk) is left out, which keeps every offset within +-max(sq, sk).
__host__ __device__ inline SeqBounds seq_bounds(int sq, int sk, int causal_kind, int wl, int wr) {
  SeqBounds r{causal_kind != 0 ? 1 : 0, causal_kind == 2 ? sk - sq : 0, 0, 0, sk - sq};
  if (wr >= 0 && wr < sq) {
    const int off = sk - sq + wr;
    r.causal_offset = r.causal && r.causal_offset < off ? r.causal_offset : off;
    r.causal = 1;
  }
  if (wl >= 0 && wl < sk) {
    r.window_lo = 1;
    r.lo_offset = sk - sq - wl;
  }
  return r;
}

/// Copies a sequence's bounds into the kernel arguments that carry them by these names (FwdArgs,
/// BwdArgs: the varlen paths' per-sequence copies, kernel.cuh varlen_args, bwd_kernel.cuh
/// varlen_bwd_args).
template <class Args>
__host__ __device__ inline void set_bounds(Args& a, const SeqBounds& sb) {
  a.causal = sb.causal;
  a.causal_offset = sb.causal_offset;
  a.window_lo = sb.window_lo;
  a.lo_offset = sb.lo_offset;
  a.diag_offset = sb.diag_offset;
}

/// Host: the call's mask (if any) into the kernel arguments that carry it by these names (FwdArgs,
/// BwdArgs: mask, mask_s{b,h,i,j} in elements, mask_kind 1 bool / 2-4 additive f32 / f16 / bf16,
/// mask_mul = 1 / units: additive values join the score in the kernels' units, as ALiBi's do).
template <class Args>
inline void set_mask(const Params& p, float units, Args& a) {
  if (!p.has_mask()) return;
  a.mask = static_cast<const uint8_t*>(p.mask);
  a.mask_sb = p.mask_st.b, a.mask_sh = p.mask_st.h;
  a.mask_si = p.mask_st.s, a.mask_sj = p.mask_st.d;
  a.mask_kind = p.mask_kind == MaskKind::keep_bool ? 1
                : p.mask_dtype == DType::f32       ? 2
                : p.mask_dtype == DType::f16       ? 3
                                                   : 4;
  a.mask_mul = 1.f / units;
}

/// Host: does the call modify scores (softcap, ALiBi or a window)? Both passes then run their
/// score-mod kernels (launch.cuh run_forward, bwd_launch.cuh run_backward).
inline bool has_score_mod(const Params& p) {
  return p.softcap > 0.f || p.alibi != nullptr || p.window_left >= 0 || p.window_right >= 0;
}

/// Host: does the call need the element-wise kernels (a score modification, a mask or dropout)?
/// The tuned kernels apply none of them: the backward's kMod kernels (bwd_launch.cuh
/// run_backward) and the forward's score-mod builds do. (Session 39: a varlen dropout backward
/// took the tuned kernels when run_backward tested only score mods, and lost its dropout.)
inline bool has_element_mod(const Params& p) {
  return has_score_mod(p) || p.has_mask() || p.has_dropout();
}

/// Host: the call's dropout into the kernel arguments that carry it by these names (FwdArgs,
/// BwdArgs: drop_seed, drop_offset, drop_threshold (0 = none), drop_rescale = 1 / (1 - p)).
template <class Args>
inline void set_dropout(const Params& p, Args& a) {
  a.drop_seed = p.seed;
  a.drop_offset = p.offset;
  a.drop_threshold = p.dropout_threshold;
  a.drop_rescale = p.dropout_rescale;
}

/// Host: a call's score modification in the kernels' encoding. Window edges that hide nothing
/// for the longest lengths (wl >= Sk, wr >= Sq) are -1, so that both fit an int; `bounds` are
/// those of (Sq, Sk) (varlen: the maxima; each tile's own come from the kernel). `units`: the
/// scale of the kernels' score in the lse's natural units (softcap with a softcap: the score is
/// then tanh(scale s / softcap), softcap_k = 2 log2(e) scale / softcap; else scale, softcap_k 0).
struct ScoreMod {
  int causal_kind;  // 0 none, 1 top-left, 2 bottom-right
  int win_left, win_right;
  SeqBounds bounds;
  float softcap_k;
  float units;
};
inline ScoreMod score_mod_of(const Params& p) {
  const int64_t sq = p.seqlen_q, sk = p.seqlen_k;
  ScoreMod m{};
  m.causal_kind = p.causal == Causal::none ? 0 : p.causal == Causal::top_left ? 1 : 2;
  m.win_left = p.window_left >= 0 && p.window_left < sk ? static_cast<int>(p.window_left) : -1;
  m.win_right = p.window_right >= 0 && p.window_right < sq ? static_cast<int>(p.window_right) : -1;
  m.bounds = seq_bounds(static_cast<int>(sq), static_cast<int>(sk), m.causal_kind, m.win_left,
                        m.win_right);
  m.units = p.scale;
  if (p.softcap > 0.f) {
    m.softcap_k = static_cast<float>(2.0 * M_LOG2E * p.scale / p.softcap);
    m.units = p.softcap;
  }
  return m;
}

}  // namespace attnkit::flash3
