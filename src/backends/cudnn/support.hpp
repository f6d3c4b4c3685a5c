// How one attnkit call is expressed as a cuDNN SDPA graph, and every reason it cannot be.
// Pure host code (no cuDNN, no CUDA): unit-tested on the CPU.
//
// Masking, in attnkit's terms (score_policy.hpp) against cuDNN's diagonal band
// (cudnn-frontend attn_score_modifiers.h), with diag = i + Sk - Sq:
//   cuDNN right bound r, BOTTOM_RIGHT alignment: keep j <= diag + r     (r >= 0)
//   cuDNN left bound l,  BOTTOM_RIGHT alignment: keep j >  diag - l     (l >= 1)
//   TOP_LEFT alignment: the same with diag = i.
// So attnkit's window (wl, wr) is l = wl + 1, r = wr (bottom-right aligned), causal is r = 0 in
// the causal's own alignment. top_left causal together with a window mixes two alignments; that
// (Sq != Sk) and every explicit mask go through a materialized additive bias instead (`Mapping`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/params.hpp"

namespace attnkit::cudnn {

enum class Align : uint8_t { top_left, bottom_right };

/// The graph shape chosen for a call (part of the plan key).
struct Mapping {
  // Native diagonal band (none of it when `bias` folds the structural rules in).
  bool band = false;
  Align align = Align::top_left;
  std::optional<int64_t> left_bound;   // cuDNN left bound (exclusive), >= 1
  std::optional<int64_t> right_bound;  // cuDNN right bound, >= 0
  // Padding mask with per-sequence lengths (varlen always; bottom-right alignment with Sq != Sk).
  bool padding = false;
  // Additive bias [Bm, Hm, Sq, Sk] in the q dtype, written by aux_kernels from the mask and, when
  // `bias_structural`, from causal/window (-inf where not visible).
  bool bias = false;
  bool bias_structural = false;
  int64_t bias_b = 1, bias_h = 1;  // Bm, Hm: B / Hq when the mask varies along them, else 1
  // Some row may see no key: out/lse of such rows are fixed up after cuDNN (out 0, lse -inf),
  // and the backward feeds cuDNN a sanitized copy of lse.
  bool may_have_empty_rows = false;
  // Nothing to compute (Sq = 0 or Sk = 0): filled without cuDNN.
  bool empty = false;
};

Mapping map_call(const Params& p);

/// Logical graph dims: [B, H, S, D] per tensor; varlen S is bucket_seqlen(max).
struct GraphDims {
  int64_t b = 0, hq = 0, hkv = 0, sq = 0, sk = 0, d = 0, dv = 0;
};
GraphDims graph_dims(const Params& p);

/// cuDNN's stats (fp32 [B, Hq, Sq, 1], natural-log LSE of the scaled, biased scores, = attnkit's
/// lse) can live directly in the caller's lse: non-varlen and packed [B, Hq, Sq] (cuDNN 9.19's
/// backward reads stats as packed BHSD whatever the declared strides). Otherwise a temporary.
bool stats_direct(const Params& p);

/// Reasons beyond the capability table why cuDNN cannot run `p` on a device of compute
/// capability `arch` (x10; 0 = unknown: arch-specific rules are skipped). Appends to `reasons`.
void cudnn_reasons(const Params& p, int arch, std::vector<std::string>& reasons);

/// Largest materialized bias this backend allocates (bytes).
inline constexpr int64_t kMaxBiasBytes = int64_t(4) << 30;

/// Varlen: the padded max length used in the graph (bucketed so plans are shared across calls
/// whose maxima differ a little): next power of two, at least 64.
int64_t bucket_seqlen(int64_t s);

}  // namespace attnkit::cudnn
