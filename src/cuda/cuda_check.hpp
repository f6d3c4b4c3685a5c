// CUDA error handling: every runtime call and every launch is checked; a failure becomes
// attnkit::Error(kCudaError) carrying CUDA's own message and the failing expression.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "attnkit/error.hpp"

namespace attnkit::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* expr, const char* file,
                                          int line) {
  throw Error(ErrorCode::kCudaError, std::string(expr) + " failed: " + cudaGetErrorName(e) + ": " +
                                         cudaGetErrorString(e) + " (" + file + ":" +
                                         std::to_string(line) + ")");
}

}  // namespace attnkit::cuda

/// Checks a cudaError_t-returning expression.
#define ATTNKIT_CUDA_CHECK(expr)                                                  \
  do {                                                                            \
    const cudaError_t attnkit_err_ = (expr);                                      \
    if (attnkit_err_ != cudaSuccess)                                              \
      ::attnkit::cuda::throw_cuda_error(attnkit_err_, #expr, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: catches launch-configuration errors without synchronizing.
#define ATTNKIT_CUDA_CHECK_LAUNCH() ATTNKIT_CUDA_CHECK(cudaGetLastError())
