// Entry points of the flash3 forward instantiations (instantiations/fwd_d*_*.cu).
#pragma once

#include "core/params.hpp"

namespace attnkit::flash3 {

/// Runs the forward for head dim D, bf16 (BF16 = true) or f16. Params must already satisfy
/// backend.cpp's capability table and extra_reasons.
template <int D, bool BF16>
void run_forward(const Params& p);

extern template void run_forward<64, true>(const Params&);
extern template void run_forward<64, false>(const Params&);
extern template void run_forward<128, true>(const Params&);
extern template void run_forward<128, false>(const Params&);
extern template void run_forward<256, true>(const Params&);
extern template void run_forward<256, false>(const Params&);

}  // namespace attnkit::flash3
