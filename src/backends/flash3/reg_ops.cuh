// Register-level helpers shared by the flash3 forward and backward kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// Two fp32 values rounded to one packed 16-bit pair (bf16 or f16), low half = a.
template <bool BF16>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  if constexpr (BF16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

/// Ties registers written asynchronously by wgmma to this point in program order, so the
/// compiler cannot hoist their reads above a wgmma_wait (or sink writes below an issue).
template <int N>
__device__ __forceinline__ void fence_regs(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    attnkit::cuda::sm90::reg_fence(x[i]);
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    attnkit::cuda::sm90::reg_fence(x[i]);
}

/// One warp's 16 rows x kD columns of an m64nkD accumulator (acc[4 j + 2 r + e] = row lane / 4 +
/// 8 r, column 8 j + 2 (lane % 4) + e), value(i) = the fp32 to store for accumulator index i,
/// rounded by pack2, go with kD / 16 stmatrix.x4 into `stage`: the shared address of the warp's
/// first row in column chunk 0 of a 128B-swizzled [rows][64] chunk layout, chunks kChunkBytes
/// apart, 1024-aligned (the layout a TMA store with a 128B-swizzle map reads). The forward's O
/// epilogue (epilogue.cuh store_output_tma) and the backward's dK / dV one (kTmaKV) use it.
template <int kD, int kChunkBytes, bool BF16, class Value>
__device__ __forceinline__ void stmatrix_acc_rows(int lane, uint32_t stage, Value value) {
  const int l7 = lane & 7, hi = (lane >> 4) & 1;
  // Row of the warp's 16 that this lane addresses: matrix (lane / 8) & 1 is the upper / lower 8.
  const uint32_t row_addr = stage + static_cast<uint32_t>((l7 + 8 * ((lane >> 3) & 1)) * 128);
#pragma unroll
  for (int j = 0; j < kD / 16; ++j) {
    // Matrices 0 / 1: rows 0-7 / 8-15 of columns 16 j .. + 7 (16-byte group 2 j of its chunk);
    // 2 / 3: the same rows of columns 16 j + 8 .. + 15. 128B swizzle: group g of row r at unit
    // (g % 8) ^ (r % 8), r % 8 = l7 (stage is 1024-aligned).
    const int g = 2 * (j % 4) + hi;
    const uint32_t addr = row_addr + (j / 4) * kChunkBytes + static_cast<uint32_t>((g ^ l7) << 4);
    attnkit::cuda::sm90::stmatrix_x4(addr, pack2<BF16>(value(8 * j + 0), value(8 * j + 1)),
                                     pack2<BF16>(value(8 * j + 2), value(8 * j + 3)),
                                     pack2<BF16>(value(8 * j + 4), value(8 * j + 5)),
                                     pack2<BF16>(value(8 * j + 6), value(8 * j + 7)));
  }
}

}  // namespace attnkit::flash3
