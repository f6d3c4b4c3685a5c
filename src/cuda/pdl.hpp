// Programmatic dependent launch (PDL, sm_90+): the split tails of the flash and flash3 forwards
// launch their second kernel with cudaLaunchAttributeProgrammaticStreamSerialization
// (launch_dependent) so that its CTAs take SMs as the first kernel's leave them. The device calls
// are no-ops before sm_90 and when the launch did not ask for PDL.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/cuda_check.hpp"

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

/// kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent launch of the
/// stream's previous kernel when `dependent` (its CTAs may start once every CTA of that kernel
/// has run pdl_launch_dependents; it must not rely on that kernel's output before
/// pdl_wait_previous), else as a plain launch. Throws Error(kCudaError) when the launch fails.
template <typename... KernelArgs, typename... Args>
void launch_dependent(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                      cudaStream_t stream, bool dependent, const Args&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = dependent ? 1 : 0;
  ATTNKIT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

}  // namespace attnkit::cuda
