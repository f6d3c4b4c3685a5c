// Settings of the `math` backend, the exact CPU oracle (fp64 accumulation).
//
// `math` materializes scores. Each worker thread handles one (sequence, kv head) at a time and
// holds, in fp64 (8 bytes per element):
//   forward : Sq*Sk                  (scores, then probabilities, of one query head)
//             + Sq*(D + Dv + 1)      (q, out, lse)
//             + Sk*(D + Dv + 1)      (k, v, dropout row)
//   backward: Sq*Sk * (2 with softcap, else 1)   (probabilities [+ tanh derivative])
//             + Sq*(2*D + Dv + 1)    (q, dq, dout, lse)
//             + Sk*(2*D + 2*Dv + 2)  (k, dk, v, dv, dropout row, dP row)
// where Sq, Sk are the (maximum) sequence lengths. The cap bounds the total over all workers: the
// backend uses fewer threads when needed, and refuses a call (Error kTooLarge, also listed by
// `explain`) when even one worker does not fit.
#pragma once

#include <cstdint>

namespace attnkit {

/// The default cap: 4 GiB.
inline constexpr uint64_t kMathDefaultMaxBytes = uint64_t{4} << 30;

/// Sets the process-wide cap in bytes (0 restores the default / environment value). Overrides the
/// environment variable ATTNKIT_MATH_MAX_BYTES. Thread-safe.
void set_math_max_bytes(uint64_t bytes);

/// The cap in effect: set_math_max_bytes() if set, else ATTNKIT_MATH_MAX_BYTES (a byte count,
/// optionally suffixed K, M or G for KiB, MiB, GiB), else kMathDefaultMaxBytes.
/// Throws Error(kInvalidArgument) when the environment variable is not a byte count.
uint64_t math_max_bytes();

}  // namespace attnkit
