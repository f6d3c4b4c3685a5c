// The D = 256 backward with packed sequences (session 30, bwd_launch_d256.cuh kVarlen), bf16: in a
// translation unit of its own, so that its kernels (the RS layout and the kMod split layout with
// kVarlen) compile beside the dense ones.
#include "backends/flash3/bwd_launch_d256.cuh"

namespace attnkit::flash3::bwd {
template void launch_backward_d256<true, true>(const Params& p);
}  // namespace attnkit::flash3::bwd
