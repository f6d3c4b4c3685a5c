// The score policy of cpu_flash on one [rows x kBk] score tile: everything DESIGN.md §2 applies
// after the product scale*q.k (the scale is already folded into the packed Q). Visibility comes
// from core/score_policy.hpp and dropout from core/philox.hpp, so this backend agrees with the
// oracle by construction.
#pragma once

#include <cstdint>

#include "core/params.hpp"
#include "core/score_policy.hpp"

namespace attnkit::cpu_flash {

/// Inclusive key range [lo, hi] that rows i0 .. i0+rows-1 can see (structural rules and
/// 0 <= j < sk); empty when lo > hi. Key blocks outside it are skipped, never computed.
KeyRange tile_key_range(const Params& p, const SeqSpan& sp, int64_t i0, int64_t rows);

/// True when the policy must run on the tile at (i0, j0): some element is structurally invisible
/// or out of range, or softcap / ALiBi / a mask transforms scores.
bool tile_needs_policy(const Params& p, const SeqSpan& sp, int64_t i0, int64_t rows, int64_t j0);

/// s[r*lds + c] for r < rows, c < kBk (row i = i0 + r, key j = j0 + c): invisible -> -inf;
/// softcap c*tanh(s/c); + ALiBi; bool mask false -> -inf; + additive mask. When `tanh_out` is
/// given (backward with softcap), tanh_out[r*lds + c] = tanh(s/c) for the softcap derivative.
void apply_score_policy(const Params& p, const SeqSpan& sp, int64_t b, int64_t h, int64_t i0,
                        int64_t rows, int64_t j0, float* s, int64_t lds, float* tanh_out);

/// Multiplies t (and t2 when given) by the dropout factor of each element: 0 if dropped,
/// 1/(1-p) if kept, keep decided by core/philox.hpp's rule for (b, h, i, j).
void apply_dropout(const Params& p, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0,
                   int64_t cols, float* t, int64_t ld, float* t2);

}  // namespace attnkit::cpu_flash
