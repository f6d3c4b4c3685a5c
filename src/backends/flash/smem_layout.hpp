// Swizzled shared-memory layout of one (ROWS, COLS) tile of 16-bit elements, and the cooperative
// global -> shared copy (cp.async, 16-byte chunks, zero-filled out of range).
//
// The tile is stored as column panels: full 64-wide panels (128-byte rows, chunk c of row r at
// chunk c ^ (r % 8): the 8 rows an ldmatrix phase reads land on 8 distinct 16-byte bank groups),
// then at most one 32-wide panel (64-byte rows, chunk c ^ ((r / 2) % 4), same property since two
// such rows share one 128-byte bank line). COLS = 96 and 192 thus need no padding.
#pragma once

#include <cstdint>

#include "cuda/ptx_sm80.hpp"

namespace attnkit::flash {

template <int ROWS, int COLS>
struct SmemLayout {
  static_assert(COLS % 32 == 0, "tile width must be a multiple of 32 elements");
  static_assert(ROWS % 8 == 0, "tile height must be a multiple of 8 rows");
  static constexpr int kRows = ROWS, kCols = COLS;
  static constexpr int kSize = ROWS * COLS;  // elements
  static constexpr int kFullPanels = COLS / 64;
  static constexpr int kHasHalfPanel = (COLS % 64) != 0;

  /// Element offset of (r, c); c's low 3 bits stay inside one 16-byte chunk.
  __device__ __forceinline__ static int off(int r, int c) {
    const int p = c >> 6;
    if (!kHasHalfPanel || p < kFullPanels) {
      const int w = c & 63;
      return p * ROWS * 64 + r * 64 + ((((w >> 3) ^ (r & 7))) << 3) + (w & 7);
    }
    const int w = c - kFullPanels * 64;
    return kFullPanels * ROWS * 64 + r * 32 + ((((w >> 3) ^ ((r >> 1) & 3))) << 3) + (w & 7);
  }
};

/// Copies rows [0, ROWS) x cols [0, COLS) of a global tile into `smem` with cp.async.
/// Row r of the tile is at gmem + r * row_stride (elements); rows >= valid_rows and columns >=
/// valid_cols (a multiple of 8) are zero-filled. All kThreads threads call it.
template <typename Layout, int kThreads, typename T>
__device__ __forceinline__ void load_tile_async(T* smem, const T* gmem, int64_t row_stride,
                                                int valid_rows, int valid_cols) {
  constexpr int kChunksPerRow = Layout::kCols / 8;
  constexpr int kChunks = Layout::kRows * kChunksPerRow;
  static_assert(kChunks % kThreads == 0, "tile chunks must split evenly over the threads");
#pragma unroll
  for (int it = 0; it < kChunks / kThreads; ++it) {
    const int idx = it * kThreads + static_cast<int>(threadIdx.x);
    const int r = idx / kChunksPerRow;
    const int c = (idx % kChunksPerRow) * 8;
    const bool ok = r < valid_rows && c < valid_cols;
    const T* src = ok ? gmem + r * row_stride + c : gmem;
    ptx::cp_async_16(ptx::smem_addr(smem + Layout::off(r, c)), src, ok);
  }
}

}  // namespace attnkit::flash
