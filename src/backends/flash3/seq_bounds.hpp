// The causal and sliding-window bounds of one sequence, as the flash3 forward encodes them
// (fwd_args.hpp: causal / causal_offset, window_lo / lo_offset, diag_offset). One function for
// the host (launch.cuh set_score_mod: a dense call's single (Sq, Sk)) and the device (kVarVarlen:
// every tile's own sequence lengths), so both apply the same rule.
#pragma once

#include <cuda_runtime.h>  // __host__ __device__

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

}  // namespace attnkit::flash3
