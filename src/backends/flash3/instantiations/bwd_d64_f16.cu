// One backward instantiation per (head dim, dtype): keeps each translation unit small and parallel.
#include "backends/flash3/bwd_launch.cuh"

namespace attnkit::flash3 {
template void run_backward<64, false>(const Params&);
}  // namespace attnkit::flash3
