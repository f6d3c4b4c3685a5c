// Small CUDA kernels around the cuDNN graph: the inputs attnkit's contract has and cuDNN's graph
// wants in another form (ragged offsets, sequence lengths, materialized bias, packed stats), and
// the fix-ups that give rows without visible keys attnkit's out = 0, lse = -inf.
// All launches are asynchronous on `stream` (cudaStream_t as void*).
#pragma once

#include <cstdint>

#include "backends/cudnn/support.hpp"
#include "core/params.hpp"

namespace attnkit::cudnn {

/// Per-call device arrays for padding masks and ragged tensors.
struct SeqArrays {
  int32_t* seq_q = nullptr;  // [B] actual query lengths (null: no padding mask)
  int32_t* seq_k = nullptr;  // [B] actual key lengths
  static constexpr int kMaxRagged = 8;
  int32_t* ragged[kMaxRagged] = {};       // [B + 1] element offsets of each sequence's first token
  int64_t token_stride[kMaxRagged] = {};  // elements between consecutive tokens of that tensor
  bool q_side[kMaxRagged] = {};           // offsets from cu_seqlens_q (else cu_seqlens_k)
  int n_ragged = 0;
};

/// Writes seq_q/seq_k (varlen: from cu_seqlens; else the constants Sq/Sk) and the ragged offsets.
void launch_seq_arrays(const Params& p, const SeqArrays& a, void* stream);

/// Writes the additive bias [Bm, Hm, Sq, Sk] (q dtype): the mask's value (bool: 0) where visible,
/// -inf where the mask hides the key or (m.bias_structural) causal/window do.
void launch_build_bias(const Params& p, const Mapping& m, void* bias, void* stream);

/// Forward epilogue over every valid row (b, h, i): reads cuDNN's stats (packed fp32
/// [B, Hq, sq_graph]); a row whose stats are not finite saw no key: its out row becomes 0 and its
/// lse -inf (`fix_empty`). Copies stats to p.lse when p.lse is set and is not `stats` itself.
void launch_stats_epilogue(const Params& p, const float* stats, int64_t sq_graph, bool fix_empty,
                           void* stream);

/// Backward prologue: packed fp32 [B, Hq, sq_graph] stats from p.lse, with -inf (rows without
/// keys) replaced by 0 so cuDNN's exp(s - stats) gives P = 0 there instead of NaN.
void launch_stats_prologue(const Params& p, float* stats, int64_t sq_graph, void* stream);

/// Zeroes every valid row of a [B, S, H, D] view of 2-byte elements (varlen rows via
/// p.cu_seqlens_q when `q_side`, else p.cu_seqlens_k). S = the view's max length.
/// `only_if_other_empty`: only the rows of sequences whose other side is empty (q side: sk = 0,
/// k side: sq = 0) — the gradient rows cuDNN's varlen backward leaves unwritten.
void launch_zero_rows(const Params& p, void* base, const Strides4& st, int64_t s, int64_t h,
                      int64_t d, bool q_side, void* stream, bool only_if_other_empty = false);

/// Sets p.lse to -inf on every valid row.
void launch_fill_lse_neg_inf(const Params& p, void* stream);

}  // namespace attnkit::cudnn
