// Options of one attention call (DESIGN.md §2). Every option is resolved and validated before
// any backend runs; a backend that cannot honour one declares it unsupported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "attnkit/tensor.hpp"

namespace attnkit {

/// Causal alignment. top_left (PyTorch SDPA's is_causal): key j visible iff j <= i.
/// bottom_right (FlashAttention's causal): j <= i + Sk - Sq.
enum class Causal : uint8_t { none, top_left, bottom_right };
const char* causal_name(Causal c);

struct Options {
  /// Softmax scale; default 1/sqrt(D). Must be finite and > 0.
  std::optional<double> scale;
  /// softcap c > 0: s <- c * tanh(s / c) on the scaled score, before biases and masks. 0 = off.
  double softcap = 0.0;
  Causal causal = Causal::none;
  /// Sliding window, bottom-right aligned as in FlashAttention: key j is visible iff
  /// i + Sk - Sq - left <= j <= i + Sk - Sq + right. -1 = unbounded on that side.
  int64_t window_left = -1;
  int64_t window_right = -1;
  /// ALiBi slopes, f32 [Hq] or [B, Hq]: s += -slope * |i + Sk - Sq - j|.
  TensorView alibi_slopes;
  /// Bool keep-mask (true = attend, as SDPA) or additive float mask (f32/f16/bf16), broadcastable
  /// to [B, Hq, Sq, Sk] (rank 2..4, right-aligned; size-1 dims broadcast). Masks and causal
  /// together mean both. Not allowed with varlen.
  TensorView mask;
  /// Dropout on the normalized probabilities, kept values scaled by 1/(1-p). The keep decision for
  /// (b, h, i, j) is a counter-based Philox draw keyed by (seed, offset): identical in every
  /// backend and in the backward pass.
  double dropout_p = 0.0;
  uint64_t dropout_seed = 0;
  uint64_t dropout_offset = 0;
  /// Backward with a fixed reduction order: bit-identical results run to run.
  bool deterministic = false;
  /// Varlen: packed q [total_q, Hq, D], k/v [total_k, Hkv, D]; int32 [B+1] prefix sums on the
  /// tensors' device. Maxima are optional (-1): given, no device-to-host sync is needed.
  TensorView cu_seqlens_q;
  TensorView cu_seqlens_k;
  int64_t max_seqlen_q = -1;
  int64_t max_seqlen_k = -1;
  /// cudaStream_t of the caller, as void* (nullptr = legacy default stream).
  void* stream = nullptr;
  /// Per-call backend name or alias (highest priority). Empty = scoped guard / default / auto.
  std::string backend;
  /// auto may pick a quantized-tier backend (INT8/FP8) only when this is true.
  bool allow_quantized = false;
};

}  // namespace attnkit
