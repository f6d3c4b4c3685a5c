// Host-side chunking and dtype dispatch shared by forward.cu and backward.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "attnkit/error.hpp"
#include "backends/cuda_math/common.cuh"
#include "cuda/dtype_cuda.hpp"

namespace attnkit::cuda_math {

/// Bytes of score tiles (W arrays) one chunk may hold. 512 MiB keeps an Sk = 16k chunk at 128 row
/// blocks (8192 rows) — enough blocks to fill any GPU — while staying small next to the tensors.
constexpr size_t kWorkspaceBudget = size_t(512) << 20;
/// Tests shrink the budget to force many chunks (set_workspace_budget_for_testing); 0 = default.
inline std::atomic<size_t> g_budget_override{0};
inline size_t workspace_budget() {
  const size_t o = g_budget_override.load(std::memory_order_relaxed);
  return o ? o : kWorkspaceBudget;
}

/// Workspace row length for Sk keys: at least 1, a multiple of 4 floats (16-byte rows).
inline int64_t w_ld(int64_t sk) {
  return std::max<int64_t>(4, (sk + 3) / 4 * 4);
}

/// Row blocks per chunk when each needs `arrays` W arrays of kRows * ldw floats: as many as the
/// budget allows, at least 1, at most `total` and the grid's y limit (65535).
inline int64_t chunk_blocks(int64_t total, int64_t ldw, int arrays) {
  const int64_t per_block = int64_t(kRows) * ldw * int64_t(sizeof(float)) * arrays;
  int64_t n = static_cast<int64_t>(workspace_budget()) / per_block;
  n = std::max<int64_t>(n, 1);
  n = std::min<int64_t>(n, 65535);
  return std::min<int64_t>(n, std::max<int64_t>(total, 1));
}

inline size_t align256(size_t n) {
  return (n + 255) / 256 * 256;
}

/// Calls f(TypeTag<T>{}) with T the CUDA element type of p.dtype.
template <typename F>
void dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      f(cuda::TypeTag<float>{});
      return;
    case DType::f16:
      f(cuda::TypeTag<__half>{});
      return;
    case DType::bf16:
      f(cuda::TypeTag<__nv_bfloat16>{});
      return;
    default:
      throw Error(ErrorCode::kUnsupported,
                  std::string("cuda_math: dtype ") + dtype_name(t) + " not supported");
  }
}

inline unsigned grid_dim(int64_t n) {
  return static_cast<unsigned>(n);
}

}  // namespace attnkit::cuda_math
