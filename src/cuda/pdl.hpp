// Programmatic dependent launch (PDL, sm_90+), device side: the split tails of the flash and
// flash3 forwards launch their second kernel with
// cudaLaunchAttributeProgrammaticStreamSerialization so that its CTAs take SMs as the first
// kernel's leave them. Both calls are no-ops before sm_90 and when the launch did not ask for PDL.
#pragma once

namespace attnkit::cuda {

/// Let the stream's next kernel (a programmatic dependent launch) start once every CTA of this
/// one has run this or exited.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Wait until the kernel this one depends on has completed and its memory is visible.
__device__ __forceinline__ void pdl_wait_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace attnkit::cuda
