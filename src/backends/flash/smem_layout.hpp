// Swizzled shared-memory layout of one (ROWS, COLS) tile of 16-bit elements, and the cooperative
// global -> shared copy (cp.async, 16-byte chunks, zero-filled out of range).
//
// The tile is stored as column panels: full 64-wide panels (128-byte rows, chunk c of row r at
// chunk c ^ (r % 8): the 8 rows an ldmatrix phase reads land on 8 distinct 16-byte bank groups),
// then at most one 32-wide panel (64-byte rows, chunk c ^ ((r / 2) % 4), same property since two
// such rows share one 128-byte bank line). COLS = 96 and 192 thus need no padding.
#pragma once

#include <cstdint>

#include "core/hd.hpp"
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
  ATTNKIT_HD static int off(int r, int c) {
    const int p = c >> 6;
    if (!kHasHalfPanel || p < kFullPanels) {
      const int w = c & 63;
      return p * ROWS * 64 + r * 64 + ((((w >> 3) ^ (r & 7))) << 3) + (w & 7);
    }
    const int w = c - kFullPanels * 64;
    return kFullPanels * ROWS * 64 + r * 32 + ((((w >> 3) ^ ((r >> 1) & 3))) << 3) + (w & 7);
  }

  // Split form of 2 * off() for fragment loads, so that a GEMM computes each lane's address once
  // and every ldmatrix of its k loop costs one XOR + one add (or an immediate offset), instead of
  // the full swizzle arithmetic per load (the forward issued ~1.6x FA-2's instructions, ncu run 3
  // in bench/notes/flash.md). For a lane's (r, c) with c < 16 and a tile offset (R, C) with
  // R % 8 == 0 and C % 16 == 0:
  //   2 * off(r + R, c + C) == (lane_full(r, c) ^ xor_of(C)) + add_of(R, C)   (64-wide panels)
  //                         == (lane_half(r, c) ^ xor_of(C)) + add_of(R, C)   (the 32-wide panel)
  // because R keeps r % 8 (the swizzle key), C adds an even chunk count (2 * j) that XORs with the
  // lane's chunk bit ((2j + x) ^ y == 2j ^ x ^ y for x in {0, 1}), and the row / panel offsets
  // have no bits in 4..6 (the swizzled chunk bits of a byte offset). Checked exhaustively on the
  // host by tests/backends/flash/smem_layout_test.cpp.
  ATTNKIT_HD static uint32_t lane_full(int r, int c) {
    return static_cast<uint32_t>(2 * (r * 64 + ((((c >> 3) ^ (r & 7))) << 3) + (c & 7)));
  }
  ATTNKIT_HD static uint32_t lane_half(int r, int c) {
    return static_cast<uint32_t>(2 * (r * 32 + ((((c >> 3) ^ ((r >> 1) & 3))) << 3) + (c & 7)));
  }
  /// True when column offset C lies in the 32-wide panel.
  ATTNKIT_HD static bool in_half(int C) { return kHasHalfPanel && C >= kFullPanels * 64; }
  ATTNKIT_HD static uint32_t xor_of(int C) {
    const int w = in_half(C) ? C - kFullPanels * 64 : (C & 63);
    return static_cast<uint32_t>((w >> 3) << 4);
  }
  ATTNKIT_HD static uint32_t add_of(int R, int C) {
    return in_half(C) ? static_cast<uint32_t>(kFullPanels * ROWS * 128 + R * 64)
                      : static_cast<uint32_t>((C >> 6) * ROWS * 128 + R * 128);
  }
};

/// A lane's fragment address generator over one swizzled tile: the tile's shared address and the
/// lane's byte offsets in both panel kinds, computed once; at(R, C) is the shared address of
/// element (r + R, c + C) (see SmemLayout's split form).
template <typename L>
struct FragAddr {
  uint32_t tile, full, half;
  __device__ __forceinline__ FragAddr(const void* s, int r, int c)
      : tile(ptx::smem_addr(s)), full(L::lane_full(r, c)), half(L::lane_half(r, c)) {}
  __device__ __forceinline__ uint32_t at(int R, int C) const {
    return tile + ((L::in_half(C) ? half : full) ^ L::xor_of(C)) + L::add_of(R, C);
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

/// cp.async addresses of a thread's chunks of full (ROWS, COLS) tiles, computed once per CTA
/// (ATTNKIT_FLASH_FWD_FAST_LOAD): load_tile_async recomputes every chunk's 64-bit row offset,
/// swizzle and bounds predicate per call (~18 SASS instructions per 16-byte chunk in the
/// forward's key loop, re-materialized there under register pressure); here a full tile costs
/// one 64-bit add per chunk and no predicate. Thread t's chunk `it` is row r0 + it * kRowStep,
/// column c (the same chunks load_tile_async assigns). Only where kThreads is a multiple of the
/// chunks per row (every D but 96 at 128 threads).
template <typename Layout, int kThreads>
struct TileLoader {
  static constexpr int kChunksPerRow = Layout::kCols / 8;
  static constexpr bool kSupported = kThreads % kChunksPerRow == 0;
  static constexpr int kRowStep = kSupported ? kThreads / kChunksPerRow : 1;
  static constexpr int kIters = Layout::kRows * kChunksPerRow / kThreads;
  // Rows r and r + 8 share their swizzle (chunk ^ r % 8, or ^ (r / 2) % 4 in the 32-wide
  // panel), so chunk `it`'s shared offset is that of chunk it % kPhases plus whole row groups.
  static constexpr int kPhases = kRowStep % 8 == 0 ? 1 : (kRowStep % 4 == 0 ? 2 : 8);
  int64_t g;               // element offset of chunk 0 in the global tile: r0 * stride + c
  int64_t step;            // kRowStep * stride (elements)
  uint32_t s_ph[kPhases];  // byte offsets in the tile of chunks 0 .. kPhases - 1
  uint32_t row_bytes;      // bytes per row of this thread's panel (128, or 64 in the 32-wide one)
  __device__ __forceinline__ explicit TileLoader(int64_t stride) {
    const int r0 = static_cast<int>(threadIdx.x) / kChunksPerRow;
    const int c = (static_cast<int>(threadIdx.x) % kChunksPerRow) * 8;
    g = r0 * stride + c;
    step = kRowStep * stride;
#pragma unroll
    for (int ph = 0; ph < kPhases; ++ph)
      s_ph[ph] = 2u * static_cast<uint32_t>(Layout::off(r0 + ph * kRowStep, c));
    row_bytes = Layout::in_half(c) ? 64u : 128u;
  }
  /// Rows [0, ROWS) x cols [0, COLS) of the tile at gmem (every row and column valid).
  template <typename T>
  __device__ __forceinline__ void load_full(T* smem, const T* gmem) const {
    load_full_thr(smem, gmem + g);
  }
  /// load_full with the thread's chunk-0 offset already in `src` (= gmem + g): a caller that
  /// keeps one per-thread pointer per tensor (the forward's BN_128 = 64 register diet) needs
  /// neither the tile pointer nor g live across its loop.
  template <typename T>
  __device__ __forceinline__ void load_full_thr(T* smem, const T* src) const {
    static_assert(kSupported, "TileLoader: threads must cover whole rows");
    const uint32_t s = ptx::smem_addr(smem);
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const uint32_t rows = static_cast<uint32_t>((it / kPhases) * kPhases * kRowStep);
      const uint32_t dst =
          s + s_ph[it % kPhases] + rows * (Layout::kHasHalfPanel ? row_bytes : 128u);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src + it * step));
    }
  }
  /// Thread t's chunk `it` as load_tid issues it: tile row r0 + it * kRowStep, column c, and its
  /// shared byte offset in the phase form (offset of chunk it % kPhases + whole row groups) that
  /// equals 2 * Layout::off(row, col); the same chunks load_tile_async assigns. Host-tested
  /// against load_tile_async's assignment and off() (tests/backends/flash/smem_layout_test.cu).
  struct Chunk {
    int row, col;
    uint32_t smem_bytes;
  };
  ATTNKIT_HD static Chunk chunk_of(int t, int it) {
    const int r0 = t / kChunksPerRow, c = (t % kChunksPerRow) * 8;
    const uint32_t rows = static_cast<uint32_t>((it / kPhases) * kPhases * kRowStep);
    const uint32_t row_bytes = Layout::in_half(c) ? 64u : 128u;
    return Chunk{r0 + it * kRowStep, c,
                 2u * static_cast<uint32_t>(Layout::off(r0 + (it % kPhases) * kRowStep, c)) +
                     rows * (Layout::kHasHalfPanel ? row_bytes : 128u)};
  }
  /// The whole tile (like load_tile_async: rows >= valid_rows and columns >= valid_cols zero-
  /// filled) with no per-thread state kept between calls and no full / partial branch: the row,
  /// column and shared offsets are recomputed from %tid.x (read through a volatile asm, so not
  /// hoisted out of a loop or merged with another read) and the kernel parameter `stride` at
  /// every call, then each chunk costs one 64-bit add, one compare and a select: ~6 SASS
  /// instructions per 16-byte chunk against load_tile_async's ~18 and load_full's 3, with no
  /// loop-carried register. For key loops with no register left for a TileLoader (the 64-row
  /// D = 256 forward at 128 threads: FwdTraits::kTidLoad).
  /// kFull (FwdTraits::kTidFull): a tile with every row and column valid (the key loop's
  /// steady case) skips the predicates: chunk `it`'s source is chunk it - 1's plus one row
  /// group (an unpredicated 64-bit add; 3 SASS instructions per chunk with the cp.async, vs 6
  /// with the compare and the 64-bit select); partial tiles take the checked form below. Both
  /// branches start from %tid.x and the arguments, so no loader state lives across the caller's
  /// loop. (A predicated add chain over all tiles: ptxas turned it back into add + select.)
  template <bool kFull = false, typename T>
  __device__ __forceinline__ static void load_tid(T* smem, const T* gmem, int64_t stride,
                                                  int valid_rows, int valid_cols) {
    static_assert(kSupported, "TileLoader: threads must cover whole rows");
    uint32_t t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    const int r0 = chunk_of(static_cast<int>(t), 0).row;
    const int c = chunk_of(static_cast<int>(t), 0).col;
    if constexpr (kFull) {
      if (valid_rows >= Layout::kRows && valid_cols >= Layout::kCols) {
        uint64_t src = reinterpret_cast<uint64_t>(gmem + (r0 * stride + c));
        const int64_t step_bytes = kRowStep * stride * static_cast<int64_t>(sizeof(T));
        const uint32_t s = ptx::smem_addr(smem);
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
          const uint32_t dst = s + chunk_of(static_cast<int>(t), it).smem_bytes;
          if (it > 0) asm("add.s64 %0, %0, %1;" : "+l"(src) : "l"(step_bytes));
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
        }
        return;
      }
    }
    const int rows_left = valid_rows - r0;  // this thread's chunk `it` is valid iff it * kRowStep
    const bool col_ok = c < valid_cols;     // < rows_left and col_ok
    // Chunk addresses as a chain of byte-pointer adds in PTX: written in C++, NVVM turns
    // `ok ? src + it * step : gmem` into gmem + select(ok, element offset, 0) and then scales it
    // to bytes per chunk (10 SASS instructions per chunk instead of 6, ptxas sm_90a).
    uint64_t src = reinterpret_cast<uint64_t>(gmem + (r0 * stride + c));
    const int64_t step_bytes = kRowStep * stride * static_cast<int64_t>(sizeof(T));
    const uint32_t s = ptx::smem_addr(smem);
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const uint32_t dst = s + chunk_of(static_cast<int>(t), it).smem_bytes;
      if (it > 0) asm("add.s64 %0, %0, %1;" : "+l"(src) : "l"(step_bytes));
      const bool ok = col_ok && it * kRowStep < rows_left;
      ptx::cp_async_16(dst, ok ? reinterpret_cast<const T*>(src) : gmem, ok);
    }
  }
  /// g recomputed from %tid.x read through a volatile asm, so that the compiler does not merge
  /// it with the constructor's g and keep that live (load_full_thr's callers: rare paths only).
  __device__ __forceinline__ static int64_t opaque_g(int64_t stride) {
    uint32_t t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    const int ti = static_cast<int>(t);
    return (ti / kChunksPerRow) * stride + (ti % kChunksPerRow) * 8;
  }
};

}  // namespace attnkit::flash
