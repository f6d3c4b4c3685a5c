// The semantics of one score element, shared by every backend (host and device) so that all of
// them agree with the oracle on what is visible and how the score is transformed.
//
// For sequence b with actual lengths (sq, sk), query row i and key column j:
//   diag  = i + sk - sq                       (bottom-right aligned diagonal)
//   visible(i, j) = causal rule && window rule && bool mask (if any)
//   s     = scale * <q_i, k_j>
//   s     = softcap * tanh(s / softcap)        if softcap > 0
//   s    += -slope[b, h] * |diag - j|          if ALiBi
//   s    += mask[b, h, i, j]                   if additive mask (-inf there = not visible)
// A row with no visible key (or only -inf scores) has out = 0 and lse = -inf.
#pragma once

#include <cstdint>

#include "core/hd.hpp"
#include "core/params.hpp"

namespace attnkit {

/// Where sequence b's rows live and how long it is.
struct SeqSpan {
  int64_t q_start = 0, k_start = 0;  // token offset of row 0 (varlen) or 0
  int64_t sq = 0, sk = 0;            // actual lengths
};

/// Needs cu_seqlens readable from the calling side (host pointers on the CPU, device pointers in
/// kernels).
ATTNKIT_HD SeqSpan seq_span(const Params& p, int64_t b) {
  SeqSpan s;
  if (p.varlen) {
    s.q_start = p.cu_seqlens_q[b];
    s.k_start = p.cu_seqlens_k[b];
    s.sq = p.cu_seqlens_q[b + 1] - s.q_start;
    s.sk = p.cu_seqlens_k[b + 1] - s.k_start;
  } else {
    s.sq = p.seqlen_q;
    s.sk = p.seqlen_k;
  }
  return s;
}

/// Causal and window rules only (no mask tensor). Inclusive key range [lo, hi] of row i; empty
/// when lo > hi. Backends use it to skip fully masked tiles.
struct KeyRange {
  int64_t lo, hi;
};
ATTNKIT_HD KeyRange structural_key_range(const Params& p, int64_t i, int64_t sq, int64_t sk) {
  const int64_t diag = i + sk - sq;
  int64_t lo = 0, hi = sk - 1;
  if (p.causal == Causal::top_left && i < hi) hi = i;
  if (p.causal == Causal::bottom_right && diag < hi) hi = diag;
  if (p.window_left >= 0 && diag - p.window_left > lo) lo = diag - p.window_left;
  if (p.window_right >= 0 && diag + p.window_right < hi) hi = diag + p.window_right;
  return KeyRange{lo, hi};
}

ATTNKIT_HD bool structurally_visible(const Params& p, int64_t i, int64_t j, int64_t sq,
                                     int64_t sk) {
  const KeyRange r = structural_key_range(p, i, sq, sk);
  return j >= r.lo && j <= r.hi;
}

/// ALiBi bias for (b, h, i, j); 0 without ALiBi. T = float or double.
template <typename T>
ATTNKIT_HD T alibi_bias(const Params& p, int64_t b, int64_t h, int64_t i, int64_t j, int64_t sq,
                        int64_t sk) {
  if (p.alibi == nullptr) return T(0);
  const T slope = static_cast<T>(p.alibi[b * p.alibi_st_b + h * p.alibi_st_h]);
  int64_t dist = i + sk - sq - j;
  if (dist < 0) dist = -dist;
  return -slope * static_cast<T>(dist);
}

}  // namespace attnkit
