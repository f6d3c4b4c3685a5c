// The inputs of one check case, built once on the host from (Case, seed) and shared bit for bit by
// the backend under test and the reference.
#pragma once

#include <cstdint>

#include "attnkit/options.hpp"
#include "check/check.hpp"
#include "check/host_tensor.hpp"

namespace attnkit::check::detail {

struct Inputs {
  // Logical shapes (dense | varlen):
  HostTensor q, k, v;  // [B, Sq, Hq, D] | [total_q, Hq, D]; k/v with Sk, Hkv, D/Dv
  HostTensor dout;     // like out
  // Output templates, fully poisoned: copied for every run.
  HostTensor out;  // [B, Sq, Hq, Dv] | [total_q, Hq, Dv]
  HostTensor lse;  // f32 [B, Hq, Sq] | [Hq, total_q]
  bool has_mask = false, has_alibi = false;
  HostTensor mask;   // b8 or c.dtype, [B|1, Hq|1, Sq|1, Sk] (leading size-1 dims may be dropped)
  HostTensor alibi;  // f32 [Hq] or [B, Hq]
  HostTensor cu_q, cu_k;  // i32 [n + 1] (varlen)
  /// Every option except the tensor views (mask, alibi, cu_seqlens: set per device) and backend.
  Options opts;
};

/// Draws q, k, v, dout from N(0, 1) (rounded to c.dtype) with mt19937_64(seed); masks: bool with
/// ~30% false plus fully masked rows, or additive N(0, 1) with ~10% -inf plus fully -inf rows;
/// ALiBi slopes 2^(-8(h+1)/Hq) (per batch: times 1 + b/4).
Inputs build_inputs(const Case& c, uint64_t seed);

}  // namespace attnkit::check::detail
